// The preempt verb's reduction and evictions. See pod_preemption.h.
#include "pod_preemption.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {

absl::StatusOr<ReducedPreemption> ReducePodPreemption(const Ledger& ledger, const GangReservations& gangs,
                                                      const PodInfo& pod, const PlacementRequest& alone,
                                                      const PreemptionProposal& proposal) {
  if (pod.group.empty()) return ReduceVictimsPerNode(ledger, alone, proposal);
  const GangReservation* r = gangs.Find(pod.group);
  if (r != nullptr && r->free_slots() > 0) {
    ReducedPreemption none;
    none.why_none = absl::StrCat("group ", pod.group, " holds free slots: its pods go there, nothing to preempt");
    return none;
  }
  // The group's pods not yet running, as the filter verb would plan them: the whole group preempts as one.
  const int assigned = r != nullptr ? r->assigned_slots() : 0;
  const int size = std::max(pod.group_size, assigned + 1);
  PlacementRequest per_pod = alone;
  per_pod.gpus_per_node = 0;
  return ReduceVictimsForGroup(ledger, GroupRequest(pod.group, size - assigned, per_pod), proposal);
}

absl::Status EvictVictimsElsewhere(PodBinder* binder, const std::string& group, const ReducedPreemption& reduced) {
  for (size_t i = 0; i < reduced.evict.size(); ++i) {
    const std::string& key = reduced.evict[i];
    const size_t slash = key.find('/');
    absl::Status s = binder != nullptr
                         ? binder->EvictPod(key.substr(0, slash), key.substr(slash + 1))
                         : absl::FailedPreconditionError("standalone: there is no API server to evict pods through");
    if (s.ok() || absl::IsNotFound(s)) continue;  // gone already: as good as evicted
    const char* why = absl::IsResourceExhausted(s) ? " (a PodDisruptionBudget forbids it now)" : "";
    return absl::FailedPreconditionError(absl::StrCat(
        "group ", group, ": evicting victim ", key, " refused", why, ": ", s.message(), "; ", i, " of ",
        reduced.evict.size(), " victims on other nodes evicted, nothing preempted on ", reduced.nodes.begin()->first));
  }
  return absl::OkStatus();
}

}  // namespace rackwise::k8s
