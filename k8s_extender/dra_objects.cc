// See dra_objects.h.
#include "dra_objects.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {
namespace {

// A gang minCount under `policy` ({gang: {minCount}}); 0 when the policy is not a gang.
absl::StatusOr<int> GangMinCount(const Json* policy, absl::string_view where) {
  const Json* count = policy != nullptr ? FindPath(*policy, {"gang", "minCount"}) : nullptr;
  if (count == nullptr) return 0;
  if (!count->is_number_integer() || count->get<int64_t>() < 1 || count->get<int64_t>() > kMaxGroupSize) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".gang.minCount: expected a whole number in 1..", kMaxGroupSize));
  }
  return static_cast<int>(count->get<int64_t>());
}

}  // namespace

absl::StatusOr<std::string> DraObjects::Apply(DraKind kind, const Json& object, bool deleted) {
  switch (kind) {
    case DraKind::kResourceSlice: devices_.ApplySlice(object, deleted); return std::string();
    case DraKind::kDeviceClass: classes_.ApplyDeviceClass(object, deleted); return std::string();
    default: break;
  }
  const std::string key = ObjectKey(object);
  if (key.empty()) return absl::InvalidArgumentError("object without metadata.name");
  switch (kind) {
    case DraKind::kResourceClaim: {
      claims_.erase(key);
      if (deleted) return key;
      absl::StatusOr<ResourceClaim> claim = ResourceClaim::Parse(object);
      if (!claim.ok()) return claim.status();
      claims_.emplace(key, std::move(*claim));
      return key;
    }
    case DraKind::kResourceClaimTemplate: {
      templates_.erase(key);
      if (deleted) return std::string();
      static const Json kEmpty = Json::object();
      const Json* spec = FindPath(object, {"spec", "spec"});
      absl::StatusOr<ClaimSpec> parsed = ClaimSpec::Parse(spec != nullptr ? *spec : kEmpty,
                                                          absl::StrCat("ResourceClaimTemplate ", key, ": spec.spec"));
      if (!parsed.ok()) return parsed.status();
      templates_.emplace(key, std::move(*parsed));
      return std::string();
    }
    case DraKind::kComputeDomain: ApplyComputeDomain(key, object, deleted); return std::string();
    default:
      if (absl::Status s = ApplyGroupSize(kind, key, object, deleted); !s.ok()) return s;
      return std::string();
  }
}

void DraObjects::ApplyComputeDomain(const std::string& key, const Json& object, bool deleted) {
  if (auto it = compute_domains_.find(key); it != compute_domains_.end()) {
    const std::string ns = key.substr(0, key.find('/'));
    channel_templates_.erase(absl::StrCat(ns, "/", it->second.channel_template));
    compute_domains_.erase(it);
  }
  if (deleted) return;
  ComputeDomainInfo info;
  if (const Json* n = FindPath(object, {"spec", "numNodes"}); n != nullptr && n->is_number_integer()) {
    info.num_nodes = static_cast<int>(std::clamp<int64_t>(n->get<int64_t>(), 0, kMaxGroupSize));
  }
  if (const Json* t = FindPath(object, {"spec", "channel", "resourceClaimTemplate"})) {
    info.channel_template = StringField(*t, "name");
  }
  if (!info.channel_template.empty()) {
    channel_templates_[absl::StrCat(key.substr(0, key.find('/')), "/", info.channel_template)] = key;
  }
  compute_domains_[key] = std::move(info);
}

absl::Status DraObjects::ApplyGroupSize(DraKind kind, const std::string& key, const Json& object, bool deleted) {
  if (kind == DraKind::kPodGroup) {
    pod_group_sizes_.erase(key);
    if (deleted) return absl::OkStatus();
    absl::StatusOr<int> n = GangMinCount(FindPath(object, {"spec", "schedulingPolicy"}),
                                         absl::StrCat("PodGroup ", key, ": spec.schedulingPolicy"));
    if (!n.ok()) return n.status();
    if (*n > 0) pod_group_sizes_[key] = *n;
    return absl::OkStatus();
  }
  for (const std::string& k : workload_groups_[key]) pod_group_sizes_.erase(k);
  workload_groups_.erase(key);
  if (deleted) return absl::OkStatus();
  const Json* groups = FindPath(object, {"spec", "podGroups"});
  if (groups == nullptr || !groups->is_array()) return absl::OkStatus();
  std::vector<std::string>& keys = workload_groups_[key];
  for (size_t i = 0; i < groups->size(); ++i) {
    const Json& g = (*groups)[i];
    absl::StatusOr<int> n =
        GangMinCount(FindField(g, "policy"), absl::StrCat("Workload ", key, ": spec.podGroups[", i, "].policy"));
    if (!n.ok()) return n.status();
    if (*n == 0) continue;
    std::string k = absl::StrCat(key, "/", StringField(g, "name"));
    pod_group_sizes_[k] = *n;
    keys.push_back(std::move(k));
  }
  return absl::OkStatus();
}

void DraObjects::Replace(DraKind kind, const std::vector<Json>& items) {
  switch (kind) {
    case DraKind::kResourceSlice: devices_.ReplaceSlices(items); return;
    case DraKind::kDeviceClass: classes_.ReplaceDeviceClasses(items); return;
    case DraKind::kResourceClaim: claims_.clear(); break;
    case DraKind::kResourceClaimTemplate: templates_.clear(); break;
    case DraKind::kComputeDomain:
      compute_domains_.clear();
      channel_templates_.clear();
      break;
    case DraKind::kPodGroup:
    case DraKind::kWorkload:
      // Both kinds share pod_group_sizes_: drop only the kind's own keys.
      if (kind == DraKind::kWorkload) {
        for (const auto& [w, keys] : workload_groups_) {
          for (const std::string& k : keys) pod_group_sizes_.erase(k);
        }
        workload_groups_.clear();
      } else {
        absl::erase_if(pod_group_sizes_,
                       [](const auto& e) { return std::count(e.first.begin(), e.first.end(), '/') == 1; });
      }
      break;
  }
  for (const Json& item : items) (void)Apply(kind, item, false);
}

void DraObjects::CountAllocated(const ResourceClaim& claim, const std::string& node_name, ClaimGpus* out) const {
  std::set<std::pair<std::string, int>> boards;  // (node, index): a MIG slice and its board count once
  std::set<std::string> unmapped;                // devices no slice describes: one GPU each
  for (const AllocatedDevice& d : claim.devices) {
    if (!claim.spec.IsGpuResult(d.request, classes_)) continue;
    const SliceDevice* where = devices_.Find(d.driver, d.pool, d.device);
    if (where == nullptr || where->gpu_index < 0) {
      unmapped.insert(absl::StrCat(d.driver, "/", d.pool, "/", d.device));
      continue;
    }
    if (boards.emplace(where->node, where->gpu_index).second && (where->node.empty() || where->node == node_name)) {
      out->indices.push_back(where->gpu_index);
    }
  }
  out->gpus = static_cast<int>(boards.size() + unmapped.size());
}

ClaimGpus DraObjects::ClaimOf(const std::string& pod_namespace, const PodClaimRef& ref, const std::string& node_name,
                              int largest_node_gpus) const {
  ClaimGpus out;
  if (!ref.claim.empty()) out.key = absl::StrCat(pod_namespace, "/", ref.claim);
  if (auto it = claims_.find(out.key); !out.key.empty() && it != claims_.end()) {
    if (it->second.allocated) {
      CountAllocated(it->second, node_name, &out);
    } else {
      out.gpus = it->second.spec.Gpus(classes_, largest_node_gpus);
    }
    return out;
  }
  // The claim is not seen yet (a template's claim is made as the pod is created): its template says what it asks.
  if (!ref.template_name.empty()) {
    if (auto t = templates_.find(absl::StrCat(pod_namespace, "/", ref.template_name)); t != templates_.end()) {
      out.gpus = t->second.Gpus(classes_, largest_node_gpus);
    }
  }
  return out;
}

PodDevices DraObjects::Resolve(const PodInfo& pod, const std::string& node_name, int largest_node_gpus) const {
  PodDevices out;
  for (const PodClaimRef& ref : pod.claims) {
    ClaimGpus c = ClaimOf(pod.namespace_, ref, node_name, largest_node_gpus);
    if (c.gpus > 0) out.claims.push_back(std::move(c));
    if (out.compute_domain.empty() && !ref.template_name.empty()) {
      auto cd = channel_templates_.find(absl::StrCat(pod.namespace_, "/", ref.template_name));
      if (cd != channel_templates_.end()) {
        out.compute_domain = cd->second;
        out.compute_domain_nodes = compute_domains_.at(cd->second).num_nodes;
      }
    }
  }
  if (!pod.extended_resource_claim.empty()) {
    auto it = claims_.find(absl::StrCat(pod.namespace_, "/", pod.extended_resource_claim));
    if (it != claims_.end() && it->second.allocated) {
      ClaimGpus c;
      CountAllocated(it->second, node_name, &c);
      out.extended_indices = std::move(c.indices);
    }
  }
  if (!pod.workload_pod_group.empty()) {
    if (auto it = pod_group_sizes_.find(pod.workload_pod_group); it != pod_group_sizes_.end()) {
      out.workload_min_count = it->second;
    }
  }
  return out;
}

}  // namespace rackwise::k8s
