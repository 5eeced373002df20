// The client the faces (the Slurm plugin, the extender) use to reach the shared power ledger: every call has a
// deadline, and follows the leader: a replica that does not lead names the leader's address and the call is
// sent there; an unreachable replica (or one that knows no leader yet) makes the call try the next address.
// Retrying is safe: Reserve of the same owner and content, Release and Reconcile are idempotent, so a call whose
// answer was lost with a dying leader may be sent again to its successor.
// Not thread-safe: one client per thread, or a lock around it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rackwise/v1/ledger_service.grpc.pb.h"

namespace rackwise::ledger {

// The trailing metadata in which a replica that does not lead names the leader's address (the service sets
// it, the client follows it): part of the PowerLedger protocol, so both sides read it here.
inline constexpr char kLeaderAddressMetadata[] = "rackwise-leader-address";

class LedgerClient {
 public:
  // `addresses`: every replica's HOST:PORT (any order). `deadline`: for one whole call, redirects included.
  // `credentials`: TLS (ledger_tls.h); null: plain gRPC. `bearer_token`: sent on every call as
  // `authorization: Bearer <token>` (as metadata, not call credentials, which gRPC withholds from plain channels:
  // a site may terminate TLS in front of the ledger); empty: none.
  LedgerClient(std::vector<std::string> addresses, std::chrono::milliseconds deadline,
               std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr, std::string bearer_token = "");

  absl::Status Reserve(const v1::Allocation& allocation);
  absl::StatusOr<bool> Release(const std::string& owner);
  absl::StatusOr<v1::ReconcileResponse> Reconcile(const std::string& owner_prefix,
                                                  absl::Span<const v1::Allocation> allocations);
  absl::StatusOr<std::vector<v1::Allocation>> List(const std::string& owner_prefix);
  // Status of the replica the client talks to now (any replica answers it).
  absl::StatusOr<v1::StatusResponse> Status();

  // The address calls go to first (the leader as last learned).
  const std::string& current_address() const { return addresses_[current_]; }

 private:
  // Calls `rpc(stub, context)` until a replica that leads answers, the deadline passes, or the error is the
  // ledger's own answer (not a redirect, not unreachable).
  template <typename Rpc>
  absl::Status CallLeader(Rpc rpc);
  v1::PowerLedger::Stub* StubFor(size_t index);
  // Sets the deadline and the caller's token on a call's context.
  void Prepare(grpc::ClientContext* context, std::chrono::system_clock::time_point until) const;
  size_t IndexOf(const std::string& address);

  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<v1::PowerLedger::Stub>> stubs_;
  std::chrono::milliseconds deadline_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::string authorization_;  // "Bearer <token>", or empty
  size_t current_ = 0;
};

}  // namespace rackwise::ledger
