// Admin credential check for the mutating gRPC calls (see admin_auth.h).
#include "admin_auth.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "json_fields.h"

namespace rackwise::k8s {
namespace {

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size() || b.empty()) return false;  // the length is not secret
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

absl::Status CheckAdmin(const AdminAuthConfig& config, const CallerCredentials& caller) {
  if (config.token.empty() && !config.client_certs) {
    return absl::PermissionDeniedError(
        "no admin credential is configured on this extender (--admin-token-file or --grpc-admin-ca); "
        "changes over gRPC are disabled");
  }
  if (config.client_certs && caller.verified_client_cert) {
    if (config.common_names.empty()) return absl::OkStatus();
    for (const std::string& cn : caller.common_names) {
      if (std::find(config.common_names.begin(), config.common_names.end(), cn) != config.common_names.end()) {
        return absl::OkStatus();
      }
    }
    return absl::PermissionDeniedError("the client certificate's common name is not an admin");
  }
  if (!config.token.empty() && !caller.authorization.empty()) {
    absl::string_view v = caller.authorization;
    constexpr absl::string_view kBearer = "Bearer ";
    if (v.size() > kBearer.size() && EqualsIgnoreCase(v.substr(0, kBearer.size()), kBearer) &&
        ConstantTimeEquals(v.substr(kBearer.size()), config.token)) {
      return absl::OkStatus();
    }
    return absl::PermissionDeniedError("the bearer token is not the admin token");
  }
  return absl::UnauthenticatedError(absl::StrCat("this call changes state and needs an admin credential (",
                                                 config.token.empty() ? "" : "authorization: Bearer <token>",
                                                 !config.token.empty() && config.client_certs ? " or " : "",
                                                 config.client_certs ? "a TLS client certificate" : "", ")"));
}

absl::Status LoadAdminToken(const std::string& path, std::string* token) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  std::string line;
  std::getline(in, line);
  std::string t(absl::StripAsciiWhitespace(line));
  if (t.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": the admin token is empty"));
  if (absl::Status s = CheckAdminTokenStrength(t); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }
  *token = std::move(t);
  return absl::OkStatus();
}

absl::Status CheckAdminTokenStrength(absl::string_view token) {
  constexpr absl::string_view kGenerate = "; generate one with `openssl rand -hex 32`";
  const std::string lower = absl::AsciiStrToLower(token);
  for (absl::string_view placeholder :
       {"replace", "change", "placeholder", "example", "dummy", "secret", "password", "token", "xxxx", "todo"}) {
    if (lower.find(std::string(placeholder)) != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("the admin token looks like a placeholder (it contains \"", placeholder, "\")", kGenerate));
    }
  }
  if (token.size() < kMinAdminTokenLength) {
    return absl::InvalidArgumentError(absl::StrCat("the admin token has ", token.size(), " characters; at least ",
                                                   kMinAdminTokenLength, " are needed", kGenerate));
  }
  std::string distinct(token);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() < 10) {
    return absl::InvalidArgumentError(
        absl::StrCat("the admin token uses only ", distinct.size(), " distinct characters", kGenerate));
  }
  return absl::OkStatus();
}

}  // namespace rackwise::k8s
