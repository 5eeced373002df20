// Credentials for the ledger's gRPC port. TLS: credentials from PEM files, for the daemon (its certificate, and
// optionally the CA its clients' certificates must chain to) and for the faces (the CA of the replicas' certificates,
// and optionally their own certificate for mutual TLS, from the description's `ledger: tls:`). A missing, unreadable or
// empty file is an error naming it, never a silent fall back to plain gRPC. Bearer tokens: one per file, read by the
// faces (the description's `ledger: token_file:`) and by the daemon (its access file's `token_file:`s).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::ledger {

// Plain gRPC when `tls` names no file at all (the section is absent); else TLS with its CA, and its certificate
// and key when given.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> LedgerChannelCredentials(const v1::LedgerTls& tls);

// The daemon's: `cert_file` and `key_file` (PEM), and with `client_ca_file` every client must present a
// certificate that chains to it.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> LedgerServerCredentials(const std::string& cert_file,
                                                                                 const std::string& key_file,
                                                                                 const std::string& client_ca_file);

// A token shorter than this is refused: guessable, or a placeholder left in place (`openssl rand -hex 32` makes
// one of 64).
inline constexpr size_t kMinLedgerTokenLength = 32;

// The bearer token in `path`: its first line, whitespace trimmed. InvalidArgument naming `what` and the file when
// it cannot be read or the token is shorter than kMinLedgerTokenLength.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, absl::string_view what);

}  // namespace rackwise::ledger
