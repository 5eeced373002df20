// See ledger_client.h.
#include "ledger_client.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "grpc_status.h"

namespace rackwise::ledger {

LedgerClient::LedgerClient(std::vector<std::string> addresses, std::chrono::milliseconds deadline,
                           std::shared_ptr<grpc::ChannelCredentials> credentials, std::string bearer_token)
    : addresses_(std::move(addresses)),
      deadline_(deadline),
      credentials_(credentials ? std::move(credentials) : grpc::InsecureChannelCredentials()),
      authorization_(bearer_token.empty() ? "" : absl::StrCat("Bearer ", bearer_token)) {
  if (addresses_.empty()) addresses_.push_back("127.0.0.1:0");  // every call then fails UNAVAILABLE, clearly
  stubs_.resize(addresses_.size());
}

size_t LedgerClient::IndexOf(const std::string& address) {
  for (size_t i = 0; i < addresses_.size(); ++i) {
    if (addresses_[i] == address) return i;
  }
  addresses_.push_back(address);  // a leader the configuration did not list: follow it all the same
  stubs_.emplace_back();
  return addresses_.size() - 1;
}

v1::PowerLedger::Stub* LedgerClient::StubFor(size_t index) {
  if (!stubs_[index]) stubs_[index] = v1::PowerLedger::NewStub(grpc::CreateChannel(addresses_[index], credentials_));
  return stubs_[index].get();
}

void LedgerClient::Prepare(grpc::ClientContext* context, std::chrono::system_clock::time_point until) const {
  context->set_deadline(until);
  if (!authorization_.empty()) context->AddMetadata("authorization", authorization_);
}

template <typename Rpc>
absl::Status LedgerClient::CallLeader(Rpc rpc) {
  const auto until = std::chrono::system_clock::now() + deadline_;
  std::string last_error = "no replica tried";
  for (int attempt = 0; std::chrono::system_clock::now() < until; ++attempt) {
    grpc::ClientContext context;
    Prepare(&context, until);
    const grpc::Status s = rpc(StubFor(current_), &context);
    if (s.ok()) return absl::OkStatus();
    const auto& trailers = context.GetServerTrailingMetadata();
    auto leader = trailers.find(kLeaderAddressMetadata);
    if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION && leader != trailers.end()) {
      current_ = IndexOf(std::string(leader->second.data(), leader->second.size()));
    } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      current_ = (current_ + 1) % addresses_.size();
      // Every replica tried once without a leader: an election may be under way; wait a little between rounds.
      if ((attempt + 1) % addresses_.size() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } else {
      return daemon::FromGrpcStatus(s);
    }
    last_error = absl::StrCat(addresses_[current_], ": ", s.error_message());
  }
  return absl::DeadlineExceededError(
      absl::StrCat("no leader of the power ledger answered within ", deadline_.count(), " ms; last: ", last_error));
}

absl::Status LedgerClient::Reserve(const v1::Allocation& allocation) {
  v1::ReserveRequest request;
  *request.mutable_allocation() = allocation;
  v1::ReserveResponse response;
  return CallLeader(
      [&](v1::PowerLedger::Stub* stub, grpc::ClientContext* ctx) { return stub->Reserve(ctx, request, &response); });
}

absl::StatusOr<bool> LedgerClient::Release(const std::string& owner) {
  v1::ReleaseOwnerRequest request;
  request.set_owner(owner);
  v1::ReleaseOwnerResponse response;
  absl::Status s = CallLeader(
      [&](v1::PowerLedger::Stub* stub, grpc::ClientContext* ctx) { return stub->Release(ctx, request, &response); });
  if (!s.ok()) return s;
  return response.released();
}

absl::StatusOr<v1::ReconcileResponse> LedgerClient::Reconcile(const std::string& owner_prefix,
                                                              absl::Span<const v1::Allocation> allocations) {
  v1::ReconcileRequest request;
  request.set_owner_prefix(owner_prefix);
  for (const v1::Allocation& a : allocations) *request.add_allocations() = a;
  v1::ReconcileResponse response;
  absl::Status s = CallLeader(
      [&](v1::PowerLedger::Stub* stub, grpc::ClientContext* ctx) { return stub->Reconcile(ctx, request, &response); });
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<std::vector<v1::Allocation>> LedgerClient::List(const std::string& owner_prefix) {
  v1::ListRequest request;
  request.set_owner_prefix(owner_prefix);
  v1::ListResponse response;
  absl::Status s = CallLeader(
      [&](v1::PowerLedger::Stub* stub, grpc::ClientContext* ctx) { return stub->List(ctx, request, &response); });
  if (!s.ok()) return s;
  return std::vector<v1::Allocation>(response.allocations().begin(), response.allocations().end());
}

absl::StatusOr<v1::StatusResponse> LedgerClient::Status() {
  grpc::ClientContext context;
  Prepare(&context, std::chrono::system_clock::now() + deadline_);
  v1::StatusResponse response;
  const grpc::Status s = StubFor(current_)->Status(&context, v1::StatusRequest{}, &response);
  if (!s.ok())
    return absl::Status(daemon::FromGrpcStatus(s).code(), absl::StrCat(current_address(), ": ", s.error_message()));
  return response;
}

}  // namespace rackwise::ledger
