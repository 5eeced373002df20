// What operators have set on the extender, and saving it. See operator_overrides.h.
#include "operator_overrides.h"

#include "absl/strings/str_cat.h"
#include "rackwise/cluster_state.h"
#include "rackwise/gpu_mask.h"

namespace rackwise::k8s {

v1::ClusterState OperatorOverrides::Capture(const Ledger& ledger,
                                            const OversubscribedAllocations& oversubscribed) const {
  // The ledger's state holds caps as changed (only operators change them here), but also pods' allocations
  // and the API server's health: keep the operators' allocations, and their own view of node health.
  const Topology& topology = ledger.topology();
  v1::ClusterState all = CaptureClusterState(ledger);
  v1::ClusterState out;
  for (const v1::Allocation& a : all.allocations()) {
    if (allocations_.contains(a.id())) *out.add_allocations() = a;
  }
  for (NodeId n = 0; n < static_cast<NodeId>(topology.nodes().size()); ++n) {
    const GpuMask failed = ledger.failed_gpus(n);
    if (health_[n] == NodeHealth::kUp && failed == 0) continue;
    v1::NodeStatus* status = out.add_nodes();
    status->set_node(topology.nodes()[n].name);
    status->set_health(NodeHealthToProto(health_[n]));
    for (int gpu : GpuIndices(failed)) status->add_failed_gpus(static_cast<uint32_t>(gpu));
  }
  *out.mutable_caps() = all.caps();
  oversubscribed.AddTo(&out);
  return out;
}

absl::Status OperatorOverrides::Save(const Ledger& ledger, const OversubscribedAllocations& oversubscribed) const {
  if (!sink_) return absl::OkStatus();
  return sink_(Capture(ledger, oversubscribed));
}

absl::Status OperatorOverrides::Persist(const Ledger& ledger, const OversubscribedAllocations& oversubscribed,
                                        const std::function<void()>& undo) const {
  absl::Status saved = Save(ledger, oversubscribed);
  if (saved.ok()) return saved;
  undo();
  return absl::UnavailableError(absl::StrCat("the change could not be saved, so it was undone: ", saved.message()));
}

}  // namespace rackwise::k8s
