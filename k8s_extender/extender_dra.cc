// The extender service's DRA side: pods' GPUs from ResourceClaims, groups from ComputeDomains and the Workload
// API, and booking bound pods anew when the objects they depend on change (a claim allocated after its pod was
// seen bound, a restart that lists pods before claims, a shared claim's holder leaving). See extender_service.h.
#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "extender_service.h"

namespace rackwise::k8s {
namespace {

GpuMask MaskOf(const std::vector<int>& indices) {
  GpuMask mask = 0;
  for (int i : indices) {
    if (i >= 0 && i < 64) mask |= GpuMask{1} << i;
  }
  return mask;
}

// A ComputeDomain's pods are one group planned within one NVLink domain (unless the pod says otherwise); its size
// is rackwise.io/group-size, else numNodes (one pod per node, as the driver runs one IMEX daemon per node), else
// what another source said. rackwise.io/group outranks it.
void ApplyComputeDomain(const PodDevices& devices, PodInfo* pod) {
  if (devices.compute_domain.empty() || pod->group_source == GroupSource::kAnnotation) return;
  int size = pod->annotated_group_size;
  if (size == 0) size = devices.compute_domain_nodes;
  if (size == 0) size = pod->group_size;
  const absl::string_view name = absl::string_view(devices.compute_domain).substr(pod->namespace_.size() + 1);
  pod->group = absl::StrCat(pod->namespace_, "/computedomain/", name);
  pod->group_source = GroupSource::kComputeDomain;
  pod->group_size = size;
  if (!pod->locality) pod->locality = Locality::kRequired;
  if (size <= 1) {
    pod->group.clear();
    pod->group_source = GroupSource::kNone;
    pod->group_size = 1;
  }
}

}  // namespace

ExtenderService::ResolvedPod ExtenderService::ResolveLocked(const PodInfo& raw, const std::string& node_name) const {
  ResolvedPod r{raw, {}, 0};
  if (!raw.HasDraReferences()) return r;
  const PodDevices devices = dra_.Resolve(raw, node_name, largest_node_gpus_);
  const std::string key = raw.Key();
  for (const ClaimGpus& claim : devices.claims) {
    if (!claim.key.empty()) {
      auto holder = claim_holder_.find(claim.key);
      if (holder != claim_holder_.end() && holder->second != key) continue;  // counted with another pod
      r.counted_claims.push_back(claim.key);
    }
    r.info.gpus += claim.gpus;
    r.allocated |= MaskOf(claim.indices);
  }
  r.allocated |= MaskOf(devices.extended_indices);
  ApplyComputeDomain(devices, &r.info);
  if (r.info.group.empty() && !raw.workload_pod_group.empty() && devices.workload_min_count > 1) {
    r.info.group = absl::StrCat(raw.namespace_, "/workload/", raw.workload_group);
    r.info.group_source = GroupSource::kWorkload;
    r.info.group_size = devices.workload_min_count;
  }
  return r;
}

GpuMask ExtenderService::PickGpus(NodeId node, int count, GpuMask allocated) const {
  const GpuMask free =
      FullGpuMask(topology_->nodes()[node].gpus) & ~ledger_.allocated_gpus(node) & ~ledger_.failed_gpus(node);
  GpuMask out = LowestGpus(free & allocated, count);
  out |= LowestGpus(free & ~out, count - std::popcount(out));
  return std::popcount(out) == count ? out : 0;
}

void ExtenderService::TrackDraPodLocked(const PodInfo& raw) {
  const std::string key = raw.Key();
  UntrackDraPodLocked(key);
  if (!raw.HasDraReferences() || !raw.Holds()) return;
  for (const PodClaimRef& ref : raw.claims) {
    if (!ref.claim.empty()) claim_users_[absl::StrCat(raw.namespace_, "/", ref.claim)].push_back(key);
  }
  if (!raw.extended_resource_claim.empty()) {
    claim_users_[absl::StrCat(raw.namespace_, "/", raw.extended_resource_claim)].push_back(key);
  }
  dra_pods_[key] = raw;
}

void ExtenderService::UntrackDraPodLocked(const std::string& key) {
  auto it = dra_pods_.find(key);
  if (it == dra_pods_.end()) return;
  const PodInfo& raw = it->second;
  auto drop = [&](const std::string& claim) {
    auto users = claim_users_.find(absl::StrCat(raw.namespace_, "/", claim));
    if (users == claim_users_.end()) return;
    std::erase(users->second, key);
    if (users->second.empty()) claim_users_.erase(users);
  };
  for (const PodClaimRef& ref : raw.claims) {
    if (!ref.claim.empty()) drop(ref.claim);
  }
  if (!raw.extended_resource_claim.empty()) drop(raw.extended_resource_claim);
  dra_pods_.erase(it);
}

void ExtenderService::ReapplyLocked(int64_t now_ms) {
  // Booking a pod anew may release claims that queue other pods: bounded, since each round books holders.
  for (int round = 0; round < 8 && !reapply_.empty(); ++round) {
    std::vector<std::string> keys;
    keys.swap(reapply_);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (const std::string& key : keys) {
      auto it = dra_pods_.find(key);
      if (it == dra_pods_.end()) continue;
      const PodInfo raw = it->second;
      ApplyPodLocked(raw, now_ms);
    }
  }
  reapply_.clear();
}

void ExtenderService::SetNodeClique(const std::string& name, const std::string& clique) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::optional<NodeId> node = topology_->FindNode(name)) node_clique_[*node] = clique;
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
  absl::flat_hash_map<std::string, std::vector<NodeId>> cliques;
  if (pod.group_source == GroupSource::kComputeDomain) {
    for (NodeId n : per_pod.allowed_nodes) {
      if (!node_clique_[n].empty()) cliques[node_clique_[n]].push_back(n);
    }
  }
  if (cliques.empty()) return gangs_.Ensure(pod.group, size, per_pod, now_ms, options_.reservation_ttl_ms);
  // The clique with the most free GPUs first: the likeliest to hold the whole domain, and the one whose refusal
  // is told when none fits. Unlabelled candidates are left out: a ComputeDomain needs NVLink between its pods.
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [clique, nodes] : cliques) {
    int free = 0;
    for (NodeId n : nodes) {
      free +=
          std::popcount(FullGpuMask(topology_->nodes()[n].gpus) & ~ledger_.allocated_gpus(n) & ~ledger_.failed_gpus(n));
    }
    order.emplace_back(-free, clique);
  }
  std::sort(order.begin(), order.end());
  absl::StatusOr<PlacementOutcome> first = absl::InternalError("no clique");
  for (size_t i = 0; i < order.size(); ++i) {
    PlacementRequest within = per_pod;
    within.allowed_nodes = cliques[order[i].second];
    absl::StatusOr<PlacementOutcome> outcome =
        gangs_.Ensure(pod.group, size, within, now_ms, options_.reservation_ttl_ms);
    if (!outcome.ok() || std::holds_alternative<PlacementDecision>(*outcome)) return outcome;
    if (i == 0) first = std::move(outcome);
  }
  return first;
}

absl::Status ExtenderService::ApplyDraObject(DraKind kind, const Json& object, bool deleted, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  last_now_ms_ = now_ms;
  absl::StatusOr<std::string> applied = dra_.Apply(kind, object, deleted);
  if (kind == DraKind::kResourceClaim) {
    // Only the pods naming this claim can change (a malformed claim was dropped: they lose its GPUs).
    if (auto users = claim_users_.find(ObjectKey(object)); users != claim_users_.end()) {
      reapply_.insert(reapply_.end(), users->second.begin(), users->second.end());
    }
  } else {
    for (const auto& [key, raw] : dra_pods_) reapply_.push_back(key);
  }
  ReapplyLocked(now_ms);
  return applied.status();
}

void ExtenderService::ReplaceDraObjects(DraKind kind, const std::vector<Json>& items, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  last_now_ms_ = now_ms;
  dra_.Replace(kind, items);
  for (const auto& [key, raw] : dra_pods_) reapply_.push_back(key);
  ReapplyLocked(now_ms);
}

}  // namespace rackwise::k8s
