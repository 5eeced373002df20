// The extender's DRA side. See dra_pods.h.
#include "dra_pods.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "absl/strings/str_cat.h"

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

DraPods::DraPods(const Topology& topology, GpuDeviceClasses classes)
    : objects_(std::move(classes)), node_clique_(topology.nodes().size()) {
  for (const Node& node : topology.nodes()) largest_node_gpus_ = std::max(largest_node_gpus_, node.gpus);
}

ResolvedPod DraPods::Resolve(const PodInfo& raw, const std::string& node_name) const {
  ResolvedPod r{raw, {}, 0};
  if (!raw.HasDraReferences()) return r;
  const PodDevices devices = objects_.Resolve(raw, node_name, largest_node_gpus_);
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

absl::Status DraPods::Apply(DraKind kind, const Json& object, bool deleted) {
  absl::StatusOr<std::string> applied = objects_.Apply(kind, object, deleted);
  if (kind == DraKind::kResourceClaim) {
    // Only the pods naming this claim can change (a malformed claim was dropped: they lose its GPUs).
    if (auto users = claim_users_.find(ObjectKey(object)); users != claim_users_.end()) {
      reapply_.insert(reapply_.end(), users->second.begin(), users->second.end());
    }
  } else {
    for (const auto& [key, raw] : pods_) reapply_.push_back(key);
  }
  return applied.status();
}

void DraPods::Replace(DraKind kind, const std::vector<Json>& items) {
  objects_.Replace(kind, items);
  for (const auto& [key, raw] : pods_) reapply_.push_back(key);
}

void DraPods::Track(const PodInfo& raw) {
  const std::string key = raw.Key();
  Untrack(key);
  if (!raw.HasDraReferences() || !raw.Holds()) return;
  for (const PodClaimRef& ref : raw.claims) {
    if (!ref.claim.empty()) claim_users_[absl::StrCat(raw.namespace_, "/", ref.claim)].push_back(key);
  }
  if (!raw.extended_resource_claim.empty()) {
    claim_users_[absl::StrCat(raw.namespace_, "/", raw.extended_resource_claim)].push_back(key);
  }
  pods_[key] = raw;
}

void DraPods::Untrack(const std::string& key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
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
  pods_.erase(it);
}

const PodInfo* DraPods::Tracked(const std::string& key) const {
  auto it = pods_.find(key);
  return it == pods_.end() ? nullptr : &it->second;
}

void DraPods::Hold(const std::vector<std::string>& claims, const std::string& key) {
  for (const std::string& claim : claims) claim_holder_[claim] = key;
}

void DraPods::Unhold(const std::vector<std::string>& claims, const std::string& key) {
  for (const std::string& claim : claims) {
    if (auto h = claim_holder_.find(claim); h != claim_holder_.end() && h->second == key) claim_holder_.erase(h);
  }
}

void DraPods::PassOn(const std::vector<std::string>& claims, const std::string& key) {
  for (const std::string& claim : claims) {
    auto holder = claim_holder_.find(claim);
    if (holder == claim_holder_.end() || holder->second != key) continue;
    claim_holder_.erase(holder);
    if (auto users = claim_users_.find(claim); users != claim_users_.end()) {
      for (const std::string& user : users->second) {
        if (user != key) reapply_.push_back(user);
      }
    }
  }
}

std::vector<std::string> DraPods::TakeQueued() {
  std::vector<std::string> keys;
  keys.swap(reapply_);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::vector<std::vector<NodeId>> DraPods::CliquesByFreeGpus(const Ledger& ledger,
                                                            const std::vector<NodeId>& nodes) const {
  absl::flat_hash_map<std::string, std::vector<NodeId>> cliques;
  for (NodeId n : nodes) {
    if (!node_clique_[n].empty()) cliques[node_clique_[n]].push_back(n);
  }
  // The clique with the most free GPUs first: the likeliest to hold the whole domain, and the one whose refusal
  // is told when none fits.
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [clique, members] : cliques) {
    int free = 0;
    for (NodeId n : members) {
      free += std::popcount(FullGpuMask(ledger.topology().nodes()[n].gpus) & ~ledger.allocated_gpus(n) &
                            ~ledger.failed_gpus(n));
    }
    order.emplace_back(-free, clique);
  }
  std::sort(order.begin(), order.end());
  std::vector<std::vector<NodeId>> out;
  for (const auto& [free, clique] : order) out.push_back(std::move(cliques[clique]));
  return out;
}

}  // namespace rackwise::k8s
