// See extender_ledger_gate.h.
#include "extender_ledger_gate.h"

#include <utility>

namespace rackwise::ledger {

absl::StatusOr<std::unique_ptr<ExtenderLedgerGate>> ExtenderLedgerGate::Create(
    const Topology& topology, const v1::ClusterDescription& description, LedgerLink::Log log) {
  absl::StatusOr<std::unique_ptr<LedgerLink>> link = LedgerLink::Create(topology, description, "k8s/", std::move(log));
  if (!link.ok()) return link.status();
  return std::unique_ptr<ExtenderLedgerGate>(new ExtenderLedgerGate(*std::move(link)));
}

absl::Status ExtenderLedgerGate::ReserveAndCommit(Ledger& local, const std::string& owner,
                                                  const Allocation& allocation) {
  return link_->ReserveAndCommit(local, owner, allocation);
}

void ExtenderLedgerGate::Release(Ledger& local, const std::string& owner, const std::string& local_id) {
  link_->Release(local, owner, local_id);
}

absl::Status ExtenderLedgerGate::Sync(Ledger& local, const std::vector<k8s::OwnedAllocation>& own, bool reconcile) {
  std::vector<OwnAllocation> list;
  list.reserve(own.size());
  for (const k8s::OwnedAllocation& o : own) list.push_back({o.owner, o.allocation});
  return link_->Sync(local, list, reconcile);
}

}  // namespace rackwise::ledger
