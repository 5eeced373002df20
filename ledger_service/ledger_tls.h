// TLS for the ledger's gRPC port: credentials from PEM files, for the daemon (its certificate, and optionally the
// CA its clients' certificates must chain to) and for the faces (the CA of the replicas' certificates, and
// optionally their own certificate for mutual TLS, from the description's `ledger: tls:`). A missing, unreadable
// or empty file is an error naming it, never a silent fall back to plain gRPC.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
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

}  // namespace rackwise::ledger
