// Who may change state over gRPC (place, release, caps, node health). Reads need no credential. An admin is a
// caller that presents the configured bearer token (`authorization: Bearer <token>`), or a TLS client
// certificate verified against the admin CA (optionally limited to some common names). With no credential
// configured, every mutating call is refused: there is no anonymous admin.
#pragma once

#include <string>
#include <string_view>

#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace rackwise::k8s {

struct AdminAuthConfig {
  std::string token;                      // empty: tokens are not accepted
  bool client_certs = false;              // the gRPC port verifies client certificates against an admin CA
  std::vector<std::string> common_names;  // empty: any verified certificate is an admin
};

struct CallerCredentials {
  std::string authorization;              // the authorization metadata value, if any
  bool verified_client_cert = false;      // TLS peer presented a certificate the CA verified
  std::vector<std::string> common_names;  // its subject common names
};

// OK, or PermissionDenied/Unauthenticated saying what is missing. Token comparison takes constant time.
absl::Status CheckAdmin(const AdminAuthConfig& config, const CallerCredentials& caller);

// Reads a token file (first line, whitespace trimmed). Refuses an empty, short or placeholder token (see
// CheckAdminTokenStrength), naming the file.
inline constexpr size_t kMinAdminTokenLength = 32;
absl::Status LoadAdminToken(const std::string& path, std::string* token);

// Refuses tokens shorter than kMinAdminTokenLength, with fewer than 10 distinct characters, or containing a
// placeholder word ("replace", "change", "example", "secret", "password", ...): a shipped example token must
// never become a working credential.
absl::Status CheckAdminTokenStrength(absl::string_view token);

}  // namespace rackwise::k8s
