// The operator state of the extender service (caps, health overrides, failed GPUs and allocations set over
// gRPC): what is saved after every change and put back after a restart. See extender_service.h.
#include <bit>

#include "absl/strings/str_cat.h"
#include "extender_service.h"
#include "rackwise/cluster_state.h"

namespace rackwise::k8s {

void ExtenderService::SetStateSink(StateSink sink) {
  std::lock_guard<std::mutex> lock(mu_);
  state_sink_ = std::move(sink);
}

v1::ClusterState ExtenderService::OperatorState() const {
  std::lock_guard<std::mutex> lock(mu_);
  return OperatorStateLocked();
}

v1::ClusterState ExtenderService::OperatorStateLocked() const {
  // The ledger's state holds caps as changed (only operators change them here), but also pods' allocations
  // and the API server's health: keep the operators' allocations, and their own view of node health.
  v1::ClusterState all = CaptureClusterState(ledger_);
  v1::ClusterState out;
  for (const v1::Allocation& a : all.allocations()) {
    if (operator_ids_.contains(a.id())) *out.add_allocations() = a;
  }
  for (NodeId n = 0; n < static_cast<NodeId>(topology_->nodes().size()); ++n) {
    const GpuMask failed = ledger_.failed_gpus(n);
    if (operator_health_[n] == NodeHealth::kUp && failed == 0) continue;
    v1::NodeStatus* status = out.add_nodes();
    status->set_node(topology_->nodes()[n].name);
    status->set_health(NodeHealthToProto(operator_health_[n]));
    for (int gpu : GpuIndices(failed)) status->add_failed_gpus(static_cast<uint32_t>(gpu));
  }
  *out.mutable_caps() = all.caps();
  oversubscribed_.AddTo(&out);  // pods' too: their GPUs come back from the API server, their count from here
  return out;
}

void ExtenderService::SaveOversubscribed() {
  std::lock_guard<std::mutex> lock(mu_);
  if (synced_) {
    restored_groups_.clear();
    oversubscribed_.Retain([&](const std::string& id) { return ledger_.Find(id) != nullptr; });
  }
  if (!oversubscribed_.TakeChanged() || !state_sink_) return;
  // Not saved: tried again on the next beat (the book stays marked changed).
  if (!state_sink_(OperatorStateLocked()).ok()) oversubscribed_.MarkChanged();
}

absl::Status ExtenderService::PersistLocked(const std::function<void()>& undo) {
  if (!state_sink_) return absl::OkStatus();
  absl::Status saved = state_sink_(OperatorStateLocked());
  if (saved.ok()) return saved;
  undo();
  return absl::UnavailableError(absl::StrCat("the change could not be saved, so it was undone: ", saved.message()));
}

absl::Status ExtenderService::RestoreOperatorState(const v1::ClusterState& state) {
  std::lock_guard<std::mutex> lock(mu_);
  v1::ClusterState ledger_part;  // caps and allocations go to the ledger as they are
  *ledger_part.mutable_caps() = state.caps();
  *ledger_part.mutable_allocations() = state.allocations();
  for (const v1::NodeStatus& status : state.nodes()) {
    std::optional<NodeId> node = topology_->FindNode(status.node());
    if (!node) return absl::InvalidArgumentError(absl::StrCat("state names unknown node '", status.node(), "'"));
    operator_health_[*node] = NodeHealthFromProto(status.health());
    RefreshHealth(*node);
    for (uint32_t gpu : status.failed_gpus()) {
      if (gpu >= static_cast<uint32_t>(topology_->nodes()[*node].gpus))
        return absl::InvalidArgumentError(absl::StrCat("node ", status.node(), " has no GPU ", gpu));
      ledger_.SetGpuFailed(*node, static_cast<int>(gpu), true);
    }
  }
  // Operator allocations counted oversubscribed are restored at their counted watts (the state holds those).
  oversubscribed_.Restore(state);
  for (const v1::OversubscribedAllocation& o : state.oversubscribed()) {
    const size_t slot = o.id().rfind('#');
    if (slot != std::string::npos && oversubscribed_.Find(o.id()) != nullptr)
      restored_groups_[o.id().substr(0, slot)] = *oversubscribed_.Find(o.id());
  }
  if (absl::Status s = ApplyClusterState(ledger_part, &ledger_); !s.ok()) return s;
  for (const v1::Allocation& a : state.allocations()) operator_ids_[a.id()] = true;
  return absl::OkStatus();
}

}  // namespace rackwise::k8s
