// The preempt verb: kube-scheduler's proposed victims reduced to the core's (victim_reduction.h), and a group's
// victims on other nodes evicted through the API server's eviction API before kube-scheduler is answered.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "extender_service.h"

namespace rackwise::k8s {

std::optional<KnownVictim> ExtenderService::KnownVictimLocked(const std::string& uid, int64_t now_ms,
                                                              int64_t wall_now_ms) const {
  auto key = uid_to_key_.find(uid);
  if (key == uid_to_key_.end()) return std::nullopt;
  auto record = pods_.find(key->second);
  if (record == pods_.end()) return std::nullopt;
  const PodRecord& r = record->second;
  KnownVictim victim;
  victim.pod_key = key->second;
  victim.priority = r.priority;
  victim.allocation_id = r.allocation_id;
  if (!r.group.empty()) {
    const GangReservation* g = gangs_.Find(r.group);
    const GangSlot* slot = g != nullptr ? g->SlotOf(key->second) : nullptr;
    victim.allocation_id = slot != nullptr ? slot->allocation_id : "";
  }
  // Lost work runs from status.startTime; a pod the API server has not shown started yet (this extender bound it
  // moments ago, or runs standalone) from when it was booked.
  victim.running_ms = r.start_unix_ms > 0 ? wall_now_ms - r.start_unix_ms : now_ms - r.booked_ms;
  return victim;
}

absl::StatusOr<ReducedPreemption> ExtenderService::ReduceLocked(const PodInfo& pod, const PreemptionArgs& args,
                                                                int64_t now_ms, int64_t wall_now_ms) {
  const PreemptionProposal proposal{
      &args.victims, pod.priority, [&](const std::string& uid) { return KnownVictimLocked(uid, now_ms, wall_now_ms); }};
  if (pod.group.empty()) return ReduceVictimsPerNode(ledger_, SinglePodRequest(pod), proposal);
  const GangReservation* r = gangs_.Find(pod.group);
  if (r != nullptr && r->free_slots() > 0) {
    ReducedPreemption none;
    none.why_none = absl::StrCat("group ", pod.group, " holds free slots: its pods go there, nothing to preempt");
    return none;
  }
  // The group's pods not yet running, as FilterGroup would plan them: the whole group preempts as one.
  const int assigned = r != nullptr ? r->assigned_slots() : 0;
  const int size = std::max(pod.group_size, assigned + 1);
  PlacementRequest per_pod = SinglePodRequest(pod);
  per_pod.gpus_per_node = 0;
  return ReduceVictimsForGroup(ledger_, GroupRequest(pod.group, size - assigned, per_pod), proposal);
}

absl::StatusOr<ReducedPreemption> ExtenderService::Preempt(const PreemptionArgs& args, int64_t now_ms,
                                                           int64_t wall_now_ms) {
  absl::StatusOr<PodInfo> raw = ParsePod(args.pod);
  if (!raw.ok()) return absl::InvalidArgumentError(absl::StrCat("bad pod: ", raw.status().message()));
  ReducedPreemption reduced;
  PodInfo pod;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // GPUs from claims are the pod's GPUs as nvidia.com/gpu are (kube-scheduler's dry run counted neither in watts),
    // and a ComputeDomain or Workload pod group makes it a group that preempts as one.
    if (!synced_ && raw->HasDraReferences()) {  // its claims may not be listed yet: its GPUs are not known
      metrics_->CountDecision(Verb::kPreempt, "not_synced");
      return absl::UnavailableError("still rebuilding its ledger from the API server; retry shortly");
    }
    pod = raw->HasDraReferences() ? ResolveLocked(*raw, "").info : *raw;
    if (pod.gpus == 0) {  // no GPU from any source: kube-scheduler's proposal stands
      reduced.nodes = args.victims;
      metrics_->CountDecision(Verb::kPreempt, "no_gpus");
      return reduced;
    }
    if (!synced_) {
      metrics_->CountDecision(Verb::kPreempt, "not_synced");
      return absl::UnavailableError("still rebuilding its ledger from the API server; retry shortly");
    }
    if (absl::Status bad = Placer::CheckRequest(*topology_, SinglePodRequest(pod)); !bad.ok()) {
      reduced.why_none = absl::StrCat("the pod can never be placed: ", bad.message());
      metrics_->CountDecision(Verb::kPreempt, "no_candidates");
      return reduced;
    }
    absl::StatusOr<ReducedPreemption> chosen = ReduceLocked(pod, args, now_ms, wall_now_ms);
    if (!chosen.ok()) return chosen.status();
    reduced = std::move(*chosen);
  }
  // kube-scheduler deletes the victims of the one node it nominates; the group's others are evicted here first,
  // through the eviction API, so that a PodDisruptionBudget can refuse (429) before anything is deleted on the
  // nominated node. An eviction refused fails the call: kube-scheduler deletes nothing and retries the pod later.
  for (size_t i = 0; i < reduced.evict.size(); ++i) {
    const std::string& key = reduced.evict[i];
    const size_t slash = key.find('/');
    absl::Status s = binder_ != nullptr
                         ? binder_->EvictPod(key.substr(0, slash), key.substr(slash + 1))
                         : absl::FailedPreconditionError("standalone: there is no API server to evict pods through");
    if (s.ok() || absl::IsNotFound(s)) continue;  // gone already: as good as evicted
    metrics_->CountDecision(Verb::kPreempt, "eviction_refused");
    const char* why = absl::IsResourceExhausted(s) ? " (a PodDisruptionBudget forbids it now)" : "";
    return absl::FailedPreconditionError(absl::StrCat(
        "group ", pod.group, ": evicting victim ", key, " refused", why, ": ", s.message(), "; ", i, " of ",
        reduced.evict.size(), " victims on other nodes evicted, nothing preempted on ", reduced.nodes.begin()->first));
  }
  metrics_->CountDecision(Verb::kPreempt, reduced.nodes.empty()   ? "no_candidates"
                                          : reduced.evict.empty() ? "candidates"
                                                                  : "group_evicted");
  return reduced;
}

}  // namespace rackwise::k8s
