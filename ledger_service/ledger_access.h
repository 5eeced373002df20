// Who may call rackwise-ledger, and which owners each caller may write: the replica's access file
// (--access-file), YAML:
//
//   identities:
//     - name: slurmctld-c1                 # the identity in refusals, the audit log and the metrics
//       write: [slurm/c1/]                 # owner prefixes its Reserve, Release and Reconcile may touch
//       token_file: /etc/rackwise/ledger-tokens/slurmctld-c1   # optional: its bearer token, alone in the file
//       cert_names: [slurmctld.c1.example]  # optional: client certificate CN or SAN (default: [name])
//
// One token file per identity, so that the access file holds no secret (a ConfigMap) and each token is its own
// secret (mounted only where that face runs), and revoking one face is removing one file and one entry.
//
// A caller is authenticated by its verified client certificate (its subject CN or a SAN names the identity) or
// by `authorization: Bearer <token>` (compared as SHA-256 digests in constant time, against every identity's
// token without stopping at a match). Both present must name the same identity. Without either the caller is
// refused, except on a replica started with --insecure-loopback, where it is "anonymous" and may write anything.
// Every authenticated identity may read (List, Status: a face mirrors every owner); writes are checked against
// `write`, and a Reconcile's prefix must itself lie within one of them (Reconcile("slurm/") by a caller allowed
// "slurm/c1/" would release other clusters' jobs).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rackwise::ledger {

// What a call presents, as the gRPC service finds it.
struct PeerCredentials {
  std::string authorization;            // the `authorization` metadata, if any
  std::vector<std::string> cert_names;  // a verified client certificate's subject CN and SANs; empty: none
};

struct LedgerIdentity {
  std::string name;
  std::vector<std::string> write;       // owner prefixes, each ending with '/'
  std::vector<std::string> cert_names;  // the certificate names that are this identity
  bool writes_everything = false;       // the anonymous caller of an insecure replica
  bool has_token = false;
  std::array<unsigned char, 32> token_digest{};  // SHA-256 of the token
};

class LedgerAccess {
 public:
  // Reads and checks the access file and every token file it names. InvalidArgument naming the file (and the
  // line) for a syntax error, an unknown key, a bad or duplicate name, a bad prefix, an unreadable or short token,
  // a token or certificate name given to two identities.
  static absl::StatusOr<LedgerAccess> Load(const std::string& path);
  // The same from the file's text (`path` only names it in errors; token files are read).
  static absl::StatusOr<LedgerAccess> Parse(const std::string& text, const std::string& path);

  // --insecure-loopback: callers without credentials are "anonymous" and write anything (credentials presented
  // are still checked and mapped).
  void AllowAnonymous();
  bool insecure() const { return anonymous_; }

  // The caller's identity; Unauthenticated saying what was missing or did not match.
  absl::StatusOr<const LedgerIdentity*> Authenticate(const PeerCredentials& peer) const;
  // OK when `who` may write `owner` (Reserve, Release) or every owner under `prefix` (Reconcile); else
  // PermissionDenied naming the identity, the verb, the owner and what it may write.
  static absl::Status AuthorizeWrite(const LedgerIdentity& who, absl::string_view verb, absl::string_view owner);

  const std::vector<LedgerIdentity>& identities() const { return identities_; }
  // For the log: "3 identities (2 with a token): slurmctld-c1 writes slurm/c1/; ...".
  std::string Describe() const;

 private:
  const LedgerIdentity* ByToken(absl::string_view token) const;
  const LedgerIdentity* ByCertificate(const std::vector<std::string>& names) const;

  std::vector<LedgerIdentity> identities_;
  LedgerIdentity anonymous_identity_;
  bool anonymous_ = false;
};

}  // namespace rackwise::ledger
