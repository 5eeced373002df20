// The kube-scheduler verbs over the placement core: filter, prioritize, bind, preempt.
// (The API-server view, the operator API and the state gauges are in extender_state.cc.)
#include "extender_service.h"

#include <algorithm>
#include <array>
#include <bit>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pod_preemption.h"

namespace rackwise::k8s {
namespace {

constexpr char kNotSynced[] = "rackwise: still rebuilding its ledger from the API server; retry shortly";
constexpr char kUnknownNode[] = "rackwise: node is not in the cluster description";

bool IsUnresolvable(NodeReason r) { return r == NodeReason::kTooFewGpusOnNode || r == NodeReason::kWrongNodeType; }

std::string PodKeyOf(const PodInfo& p) { return p.Key(); }

// Reason texts are added to a filter answer the first time a node fails for that reason; a rack power refusal
// where a reading counts gets a text of its own per rack, naming the measured watts.
class FilterReasons {
 public:
  // `note` is appended to every text (the shared ledger's fallback, when it is in force).
  explicit FilterReasons(std::string note = "") : note_(std::move(note)) { by_reason_.fill(UINT32_MAX); }
  uint32_t For(const Ledger& ledger, NodeId node, NodeReason why, FilterResult* result) {
    if (why == NodeReason::kRackPower) {
      const RackId rack = ledger.topology().nodes()[node].rack;
      if (std::string note = MeasuredRackNote(ledger, rack); !note.empty()) {
        auto [it, added] = by_rack_.try_emplace(rack, 0);
        if (added) it->second = result->AddReason(absl::StrCat("rackwise: ", NodeReasonText(why), ": ", note, note_));
        return it->second;
      }
    }
    uint32_t& r = by_reason_[static_cast<size_t>(why)];
    if (r == UINT32_MAX) r = result->AddReason(absl::StrCat("rackwise: ", NodeReasonText(why), note_));
    return r;
  }

 private:
  std::string note_;
  std::array<uint32_t, static_cast<size_t>(NodeReason::kCount)> by_reason_;
  absl::flat_hash_map<RackId, uint32_t> by_rack_;
};

// Keeps a map of things first seen at some time within `max` entries: when full, entries older than `ttl_ms`
// go, then the oldest tenth by age (a flood of one-off names must not grow memory, and must not evict a pod
// seen after it, which could then not bind). Amortised O(1) per insertion.
template <typename Map, typename SeenMs>
void MakeRoom(Map& map, int64_t now_ms, size_t max, int64_t ttl_ms, SeenMs seen_ms) {
  if (map.size() < max) return;
  absl::erase_if(map, [&](const auto& entry) { return now_ms - seen_ms(entry.second) > ttl_ms; });
  if (map.size() < max) return;
  std::vector<int64_t> ages;
  ages.reserve(map.size());
  for (const auto& entry : map) ages.push_back(seen_ms(entry.second));
  size_t drop = map.size() - max + 1 + max / 10;
  std::nth_element(ages.begin(), ages.begin() + (drop - 1), ages.end());
  const int64_t cutoff = ages[drop - 1];  // drop everything seen before it, and enough of those seen at it
  size_t ties =
      drop - static_cast<size_t>(std::count_if(ages.begin(), ages.end(), [&](int64_t a) { return a < cutoff; }));
  absl::erase_if(map, [&](const auto& entry) {
    const int64_t seen = seen_ms(entry.second);
    if (seen < cutoff) return true;
    if (seen > cutoff || ties == 0) return false;
    --ties;
    return true;
  });
}

// Unknown names (kNoId) go to FailedAndUnresolvableNodes, one reason text for all of them.
void AddUnknownNodes(const std::vector<NodeId>& ids, FilterResult* result) {
  uint32_t unknown = UINT32_MAX;
  for (uint32_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != kNoId) continue;
    if (unknown == UINT32_MAX) unknown = result->AddReason(kUnknownNode);
    result->unresolvable.push_back({i, unknown});
  }
}

}  // namespace

ExtenderService::ExtenderService(std::unique_ptr<Topology> topology, ExtenderOptions options, PodBinder* binder,
                                 ExtenderMetrics* metrics)
    : topology_(std::move(topology)),
      candidate_cache_(topology_.get(), options.candidate_cache_entries),
      options_(options),
      binder_(binder),
      metrics_(metrics),
      ledger_(*topology_),
      gangs_(&ledger_),
      dra_(*topology_, GpuDeviceClasses(options.gpu_device_classes)),
      api_health_(topology_->nodes().size(), NodeHealth::kUp),
      operator_(topology_->nodes().size()) {}

PlacementRequest ExtenderService::SinglePodRequest(const PodInfo& pod) const {
  PlacementRequest r;
  r.id = absl::StrCat("pod/", PodKeyOf(pod));
  r.gpus = pod.gpus;
  r.gpus_per_node = pod.gpus;
  r.locality = pod.locality;
  r.watts_per_gpu = pod.watts_per_gpu;
  return r;
}

void ExtenderService::Remember(const PodInfo& pod, int64_t now_ms) {
  MakeRoom(pending_, now_ms, options_.max_pending_pods, options_.pending_ttl_ms,
           [](const PendingPod& p) { return p.seen_ms; });
  pending_[PodKeyOf(pod)] = PendingPod{pod, now_ms};
  gpu_free_pending_.erase(PodKeyOf(pod));
}

void ExtenderService::RememberGpuFree(const PodInfo& pod, int64_t now_ms) {
  MakeRoom(gpu_free_pending_, now_ms, options_.max_pending_pods, options_.pending_ttl_ms,
           [](int64_t seen_ms) { return seen_ms; });
  gpu_free_pending_[PodKeyOf(pod)] = now_ms;
  pending_.erase(PodKeyOf(pod));
}

const std::vector<NodeId>& ExtenderService::CandidateIds(const CandidateNodes& candidates,
                                                         std::vector<NodeId>* scratch) const {
  if (candidates.resolved()) return candidates.ids();
  candidates.ResolveInto(*topology_, scratch);
  return *scratch;
}

int64_t ExtenderService::GroupFirstTry(const std::string& group, int64_t now_ms) {
  MakeRoom(group_first_try_ms_, now_ms, options_.max_pending_pods, options_.pending_ttl_ms,
           [](int64_t first_ms) { return first_ms; });
  return group_first_try_ms_.try_emplace(group, now_ms).first->second;
}

OversubscribedWatts ExtenderService::CountLocked(const PlacementRequest& request) const {
  return power_.Count(*topology_, request);
}

int ExtenderService::ExpireReservations(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  return gangs_.Expire(now_ms);
}

FilterResult ExtenderService::Filter(const ExtenderArgs& args, int64_t now_ms) {
  FilterResult result;
  const CandidateNodes& candidates = args.candidate_nodes();
  const uint32_t n = static_cast<uint32_t>(candidates.size());
  absl::StatusOr<PodInfo> raw = ParsePod(args.pod);
  if (!raw.ok()) {
    result.error = absl::StrCat("rackwise: bad pod: ", raw.status().message());
    metrics_->CountDecision(Verb::kFilter, "bad_request");
    return result;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!synced_) {
    result.error = kNotSynced;
    metrics_->CountDecision(Verb::kFilter, "not_synced");
    return result;
  }
  gangs_.Expire(now_ms);
  // GPUs from claims and groups from ComputeDomains or the Workload API, when the pod names any.
  ResolvedPod resolved;
  const PodInfo* pod = &*raw;
  if (raw->HasDraReferences()) {
    resolved = dra_.Resolve(*raw, "");
    pod = &resolved.info;
  }
  if (pod->gpus == 0) {  // no GPU: every node will do (a DRA cluster sends every pod; bind posts it as it is)
    for (uint32_t i = 0; i < n; ++i) result.feasible.push_back(i);
    RememberGpuFree(*pod, now_ms);
    metrics_->CountDecision(Verb::kFilter, "no_gpus");
    return result;
  }
  const PlacementRequest request = SinglePodRequest(*pod);
  // A request the core calls malformed (watts outside the bounds, the policy's or every node type's limits)
  // can never fit: every node says why, in the core's words.
  if (absl::Status bad = Placer::CheckRequest(*topology_, request); !bad.ok()) {
    const uint32_t why = result.AddReason(absl::StrCat("rackwise: ", bad.message()));
    for (uint32_t i = 0; i < n; ++i) result.unresolvable.push_back({i, why});
    metrics_->CountDecision(Verb::kFilter, "unresolvable");
    return result;
  }
  Remember(*raw, now_ms);
  std::vector<NodeId> scratch;
  const std::vector<NodeId>& ids = CandidateIds(candidates, &scratch);
  if (!pod->group.empty()) return FilterGroup(*pod, ids, now_ms);

  // Reason texts are added the first time a node fails for that reason.
  FilterReasons reasons(shared_ledger_.FallbackNote());
  AddUnknownNodes(ids, &result);
  result.feasible.reserve(n);
  std::vector<std::optional<NodeReason>> verdicts;
  // Checks the request once, not once per node (it was checked above, so the status is OK). At the watts bind
  // will count: less than declared when the core counts the pod oversubscribed.
  const PlacementRequest counted = WithOversubscription(request, CountLocked(request));
  if (absl::Status bad = Placer::FilterNodes(ledger_, counted, ids, &verdicts); !bad.ok()) {
    result.error = absl::StrCat("rackwise: ", bad.message());
    return result;
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (ids[i] == kNoId) continue;
    const std::optional<NodeReason>& why = verdicts[i];
    if (!why) {
      result.feasible.push_back(i);
      continue;
    }
    const uint32_t r = reasons.For(ledger_, ids[i], *why, &result);
    (IsUnresolvable(*why) ? result.unresolvable : result.failed).push_back({i, r});
  }
  metrics_->CountDecision(Verb::kFilter, result.feasible.empty() ? "none_feasible" : "feasible");
  return result;
}

FilterResult ExtenderService::FilterGroup(const PodInfo& pod, const std::vector<NodeId>& ids, int64_t now_ms) {
  FilterResult result;
  const uint32_t n = static_cast<uint32_t>(ids.size());
  const std::string key = PodKeyOf(pod);
  AddUnknownNodes(ids, &result);
  const GangReservation* r = gangs_.Find(pod.group);
  const GangSlot* own = r ? r->SlotOf(key) : nullptr;
  if (own == nullptr && (r == nullptr || r->free_slots() == 0)) {
    // First pod of the group (or one beyond the slots planned so far): plan the rest of the group now.
    PlacementRequest per_pod = SinglePodRequest(pod);
    per_pod.gpus_per_node = 0;
    for (NodeId id : ids) {
      if (id != kNoId) per_pod.allowed_nodes.push_back(id);
    }
    int size = std::max(pod.group_size, r ? r->assigned_slots() + 1 : 1);
    if (per_pod.allowed_nodes.empty()) {
      metrics_->CountDecision(Verb::kFilter, "none_feasible");
      return result;
    }
    per_pod.waited_seconds = static_cast<double>(now_ms - GroupFirstTry(pod.group, now_ms)) / 1000.0;
    absl::StatusOr<PlacementOutcome> outcome = EnsureGroupLocked(pod, size, per_pod, now_ms);
    const auto* refused = outcome.ok() ? std::get_if<PlacementRefusal>(&*outcome) : nullptr;
    if (refused != nullptr && !refused->unresolvable &&
        gangs_.YieldStalled(pod.group, now_ms, ArrivalWindowMs() / 3) > 0) {
      outcome = EnsureGroupLocked(pod, size, per_pod, now_ms);  // groups whose pods stopped coming made way
    }
    if (!outcome.ok() && outcome.status().code() == absl::StatusCode::kFailedPrecondition) {
      // The shared power ledger refused a slot (another owner holds the room): the group waits, not an error.
      const uint32_t why = result.AddReason(
          absl::StrCat("rackwise: group ", pod.group, ": ", outcome.status().message(), shared_ledger_.FallbackNote()));
      for (uint32_t i = 0; i < n; ++i) {
        if (ids[i] != kNoId) result.failed.push_back({i, why});
      }
      metrics_->CountDecision(Verb::kFilter, "group_refused");
      return result;
    }
    if (!outcome.ok()) {
      result.error = absl::StrCat("rackwise: group ", pod.group, ": ", outcome.status().message());
      metrics_->CountDecision(Verb::kFilter, "error");
      return result;
    }
    if (const auto* refusal = std::get_if<PlacementRefusal>(&*outcome)) {
      const uint32_t why = result.AddReason(absl::StrCat("rackwise: group ", pod.group, " (", size, " pods x ",
                                                         pod.gpus, " GPUs) cannot be placed: ", refusal->Message(),
                                                         shared_ledger_.FallbackNote()));
      for (uint32_t i = 0; i < n; ++i) {
        if (ids[i] == kNoId) continue;
        (refusal->unresolvable ? result.unresolvable : result.failed).push_back({i, why});
      }
      metrics_->CountDecision(Verb::kFilter, refusal->unresolvable ? "group_unresolvable" : "group_refused");
      return result;
    }
    group_first_try_ms_.erase(pod.group);
    metrics_->CountDecision(Verb::kFilter, "group_reserved");
    r = gangs_.Find(pod.group);
    own = r ? r->SlotOf(key) : nullptr;
  }
  gangs_.NoteArrival(pod.group, key, now_ms, ArrivalWindowMs());
  uint32_t elsewhere = UINT32_MAX;
  for (uint32_t i = 0; i < n; ++i) {
    if (ids[i] == kNoId) continue;
    bool ok = own != nullptr ? own->node == ids[i] : (r != nullptr && r->HasFreeSlotOn(ids[i]));
    if (ok) {
      result.feasible.push_back(i);
    } else {
      if (elsewhere == UINT32_MAX) {
        elsewhere = result.AddReason(absl::StrCat("rackwise: group ", pod.group, " is reserved on other nodes"));
      }
      result.failed.push_back({i, elsewhere});
    }
  }
  metrics_->CountDecision(Verb::kFilter, result.feasible.empty() ? "none_feasible" : "feasible");
  return result;
}

absl::StatusOr<std::vector<int>> ExtenderService::Prioritize(const ExtenderArgs& args, int64_t now_ms) {
  absl::StatusOr<PodInfo> pod = ParsePod(args.pod);
  if (!pod.ok()) return absl::InvalidArgumentError(absl::StrCat("bad pod: ", pod.status().message()));
  if (pod->HasDraReferences()) {
    std::lock_guard<std::mutex> lock(mu_);
    *pod = dra_.Resolve(*pod, "").info;
  }
  const CandidateNodes& candidates = args.candidate_nodes();
  std::vector<int> out(candidates.size(), 0);
  if (pod->gpus == 0) {
    metrics_->CountDecision(Verb::kPrioritize, "no_gpus");
    return out;
  }
  std::vector<NodeId> scratch;
  const std::vector<NodeId>& ids = CandidateIds(candidates, &scratch);
  std::lock_guard<std::mutex> lock(mu_);
  const GangReservation* r = pod->group.empty() ? nullptr : gangs_.Find(pod->group);
  if (r != nullptr) {
    const GangSlot* own = r->SlotOf(PodKeyOf(*pod));
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] == kNoId) continue;
      bool reserved = own != nullptr ? own->node == ids[i] : r->HasFreeSlotOn(ids[i]);
      out[i] = reserved ? static_cast<int>(kMaxExtenderPriority) : 0;
    }
  } else {
    std::vector<int> scores;
    const PlacementRequest request = SinglePodRequest(*pod);
    Placer::ScoreNodes(ledger_, WithOversubscription(request, CountLocked(request)), ids, &scores);  // checked once
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] != kNoId) out[i] = std::clamp<int>(scores[i], 0, static_cast<int>(kMaxExtenderPriority));
    }
  }
  metrics_->CountDecision(Verb::kPrioritize, "scored");
  return out;
}

std::string ExtenderService::BookLocked(const std::string& key, const ResolvedPod& resolved, NodeId node,
                                        int64_t now_ms, PodRecord* record) {
  const PodInfo& pod = resolved.info;
  const std::string& node_name = topology_->nodes()[node].name;
  if (!pod.group.empty()) {
    if (!gangs_.Assign(pod.group, key, node, now_ms, options_.reservation_ttl_ms))
      return absl::StrCat("rackwise: group ", pod.group, " holds no free slot on ", node_name);
    record->group = pod.group;
    return "";
  }
  PlacementRequest request = SinglePodRequest(pod);
  request.allowed_nodes = {node};
  const OversubscribedWatts count = CountLocked(request);
  absl::StatusOr<PlacementOutcome> outcome = Placer::Place(ledger_, WithOversubscription(request, count));
  if (!outcome.ok()) return absl::StrCat("rackwise: ", outcome.status().message());
  if (const auto* refusal = std::get_if<PlacementRefusal>(&*outcome))
    return absl::StrCat("rackwise: pod ", key, " no longer fits on ", node_name, ": ", refusal->Message());
  const std::string owner = PodOwner(key, record->uid);
  Allocation allocation = std::get<PlacementDecision>(*outcome).ToAllocation(request.id);
  // The scheduler already allocated the pod's claims: book those very GPUs when they are free (same count, same
  // watts, so the power check above holds), so that a restart rebuilding from the claims finds the same ledger.
  if (const GpuMask exact = PickGpus(node, pod.gpus, resolved.allocated);
      std::popcount(resolved.allocated) == pod.gpus && exact == resolved.allocated && allocation.nodes.size() == 1) {
    allocation.nodes[0].gpus = exact;
  }
  if (absl::Status s = shared_ledger_.CommitAlone(ledger_, owner, allocation); !s.ok())
    return absl::StrCat("rackwise: ", s.message());  // the shared ledger's refusal names it
  oversubscribed_.Placed(request.id, count);
  record->allocation_id = request.id;
  record->owner = owner;
  return "";
}

void ExtenderService::UndoBooking(const std::string& key, const std::string& group, const std::string& allocation_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end() || it->second.confirmed) return;  // the API server's watch got there first
  if (!group.empty()) {
    gangs_.Unassign(group, key);
  } else {
    ReleaseAloneLocked(it->second.owner, allocation_id);
  }
  dra_.Unhold(it->second.counted_claims, key);
  uid_to_key_.erase(it->second.uid);
  pods_.erase(it);
}

std::string ExtenderService::Bind(const BindingArgs& args, int64_t now_ms) {
  const std::string key = absl::StrCat(args.pod_namespace, "/", args.pod_name);
  std::string group, allocation_id;
  NodeId node = kNoId;
  bool gpu_free = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<NodeId> id = topology_->FindNode(args.node);
    if (!id) {
      metrics_->CountDecision(Verb::kBind, "refused");
      return absl::StrCat("rackwise: node ", args.node, " is not in the cluster description");
    }
    node = *id;
    if (auto it = pods_.find(key); it != pods_.end()) {
      if (it->second.node == node) {
        metrics_->CountDecision(Verb::kBind, "already_bound");
        return "";
      }
      metrics_->CountDecision(Verb::kBind, "refused");
      return absl::StrCat("rackwise: pod ", key, " is already bound to ", topology_->nodes()[it->second.node].name);
    }
    auto pending = pending_.find(key);
    if (pending == pending_.end() && gpu_free_pending_.erase(key) > 0) {
      gpu_free = true;  // filter saw it ask for no GPU: nothing to book
    } else if (pending == pending_.end()) {
      metrics_->CountDecision(Verb::kBind, "refused");
      return absl::StrCat("rackwise: pod ", key, " was not seen by filter (extender restarted?); retry scheduling");
    } else {
      // Resolved again on its node: by now the scheduler has allocated its claims (PreBind runs before bind).
      const ResolvedPod pod = dra_.Resolve(pending->second.info, args.node);
      PodRecord record;
      record.uid = args.pod_uid.empty() ? pod.info.uid : args.pod_uid;
      record.node = node;
      record.booked_ms = now_ms;
      record.gpus = pod.info.gpus;
      record.counted_claims = pod.counted_claims;
      record.priority = pod.info.priority;
      if (std::string refused = BookLocked(key, pod, node, now_ms, &record); !refused.empty()) {
        metrics_->CountDecision(Verb::kBind, "refused");
        return refused;
      }
      group = record.group;
      allocation_id = record.allocation_id;
      dra_.Hold(record.counted_claims, key);
      if (!record.uid.empty()) uid_to_key_[record.uid] = key;
      pods_[key] = std::move(record);
      pending_.erase(pending);
    }
  }
  // The binding goes to the API server without holding the lock; on failure the booking is undone.
  if (binder_ != nullptr) {
    if (absl::Status s = binder_->BindPod(args); !s.ok()) {
      if (!gpu_free) UndoBooking(key, group, allocation_id);
      metrics_->CountDecision(Verb::kBind, "api_error");
      return absl::StrCat("rackwise: binding ", key, " to ", args.node, " failed: ", s.message());
    }
  }
  metrics_->CountDecision(Verb::kBind, "bound");
  return "";
}

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
    pod = raw->HasDraReferences() ? dra_.Resolve(*raw, "").info : *raw;
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
    const PreemptionProposal proposal{&args.victims, pod.priority, [&](const std::string& uid) {
                                        return KnownVictimLocked(uid, now_ms, wall_now_ms);
                                      }};
    absl::StatusOr<ReducedPreemption> chosen =
        ReducePodPreemption(ledger_, gangs_, pod, SinglePodRequest(pod), proposal);
    if (!chosen.ok()) return chosen.status();
    reduced = std::move(*chosen);
  }
  // kube-scheduler deletes the victims of the one node it nominates; the group's others are evicted here first.
  // An eviction refused fails the call: kube-scheduler deletes nothing and retries the pod later.
  if (absl::Status evicted = EvictVictimsElsewhere(binder_, pod.group, reduced); !evicted.ok()) {
    metrics_->CountDecision(Verb::kPreempt, "eviction_refused");
    return evicted;
  }
  metrics_->CountDecision(Verb::kPreempt, reduced.nodes.empty()   ? "no_candidates"
                                          : reduced.evict.empty() ? "candidates"
                                                                  : "group_evicted");
  return reduced;
}

GpuMask ExtenderService::PickGpus(NodeId node, int count, GpuMask allocated) const {
  const GpuMask free =
      FullGpuMask(topology_->nodes()[node].gpus) & ~ledger_.allocated_gpus(node) & ~ledger_.failed_gpus(node);
  GpuMask out = LowestGpus(free & allocated, count);
  out |= LowestGpus(free & ~out, count - std::popcount(out));
  return std::popcount(out) == count ? out : 0;
}

void ExtenderService::RememberGroupLocked(const std::string& group, const OversubscribedWatts& count) {
  const GangReservation* r = gangs_.Find(group);
  if (r == nullptr || !count.applied) return;  // slots planned at the declared watts need nothing remembered
  const Milliwatts counted = WattsToMilliwatts(count.counted_watts_per_gpu);
  for (const GangSlot& slot : r->slots) {
    const Allocation* a = ledger_.Find(slot.allocation_id);
    if (a != nullptr && a->per_gpu == counted) oversubscribed_.Placed(slot.allocation_id, count);
  }
}

absl::StatusOr<PlacementOutcome> ExtenderService::EnsureGroupLocked(const PodInfo& pod, int size,
                                                                    const PlacementRequest& declared, int64_t now_ms) {
  // The group's pods count less than they declare when the core counts them oversubscribed.
  const OversubscribedWatts count = CountLocked(declared);
  const PlacementRequest per_pod = WithOversubscription(declared, count);
  absl::StatusOr<PlacementOutcome> outcome = EnsureGroupAtLocked(pod, size, per_pod, now_ms);
  if (outcome.ok() && std::holds_alternative<PlacementDecision>(*outcome)) RememberGroupLocked(pod.group, count);
  return outcome;
}

absl::StatusOr<PlacementOutcome> ExtenderService::EnsureGroupAtLocked(const PodInfo& pod, int size,
                                                                      const PlacementRequest& per_pod, int64_t now_ms) {
  // A ComputeDomain needs NVLink between its pods: unlabelled candidates are left out when some are labelled.
  std::vector<std::vector<NodeId>> cliques;
  if (pod.group_source == GroupSource::kComputeDomain) cliques = dra_.CliquesByFreeGpus(ledger_, per_pod.allowed_nodes);
  if (cliques.empty()) return gangs_.Ensure(pod.group, size, per_pod, now_ms, options_.reservation_ttl_ms);
  absl::StatusOr<PlacementOutcome> first = absl::InternalError("no clique");
  for (size_t i = 0; i < cliques.size(); ++i) {
    PlacementRequest within = per_pod;
    within.allowed_nodes = cliques[i];
    absl::StatusOr<PlacementOutcome> outcome =
        gangs_.Ensure(pod.group, size, within, now_ms, options_.reservation_ttl_ms);
    if (!outcome.ok() || std::holds_alternative<PlacementDecision>(*outcome)) return outcome;
    if (i == 0) first = std::move(outcome);
  }
  return first;
}

}  // namespace rackwise::k8s
