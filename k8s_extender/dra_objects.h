// The API objects beyond pods and nodes that decide how many GPUs a pod holds and which group it is in, as the
// extender last saw them: ResourceClaims, ResourceClaimTemplates, ResourceSlices and DeviceClasses
// (resource.k8s.io/v1), NVIDIA's ComputeDomains (resource.nvidia.com/v1beta1), and the Workload API's pod
// groups (scheduling.k8s.io: PodGroup objects, and the first alpha's Workloads with pod groups inside).
// ResolvePod turns a pod's references into GPUs and a group. Not thread-safe: the extender keeps it under its
// service lock, and the reflectors feed it through ExtenderService.
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "dra_claim_spec.h"
#include "dra_device_directory.h"
#include "dra_resource_claim.h"
#include "gpu_device_classes.h"
#include "pod_spec.h"

namespace rackwise::k8s {

// The kinds of object the view holds, each listed and watched on its own path.
enum class DraKind {
  kResourceClaim,
  kResourceClaimTemplate,
  kResourceSlice,
  kDeviceClass,
  kComputeDomain,
  kPodGroup,  // scheduling.k8s.io PodGroup objects
  kWorkload,  // scheduling.k8s.io Workloads of the first alpha (pod groups inside)
};

// The GPUs one claim of a pod stands for.
struct ClaimGpus {
  std::string key;           // "namespace/claim"; "" while a template's claim does not exist yet
  int gpus = 0;              // allocated: distinct GPUs allocated; else the spec's count at its largest
  std::vector<int> indices;  // allocated GPUs' indices on the pod's node (from ResourceSlices)
};

// A pod's references resolved against the view.
struct PodDevices {
  std::vector<ClaimGpus> claims;      // the claims that hand out GPUs
  std::vector<int> extended_indices;  // GPUs of the claim behind nvidia.com/gpu, when DRA backs it
  std::string compute_domain;         // "namespace/name" of the ComputeDomain whose channel the pod claims
  int compute_domain_nodes = 0;       // its spec.numNodes
  int workload_min_count = 0;         // the pod's Workload API pod group's gang minCount (0: unknown)
};

class DraObjects {
 public:
  explicit DraObjects(GpuDeviceClasses classes) : classes_(std::move(classes)) {}

  // One object of `kind` from a watch event (`deleted` for DELETED). Returns the claim key for a claim ("" for
  // other kinds), so that the caller re-resolves the pods using it.
  // A malformed object is dropped and its error returned (naming the object and field).
  absl::StatusOr<std::string> Apply(DraKind kind, const Json& object, bool deleted);
  // A (re)list of `kind`: replaces what was held.
  void Replace(DraKind kind, const std::vector<Json>& items);

  // `pod`'s claims (on `node_name`, "" when not bound), its ComputeDomain and its Workload pod group's size.
  // `largest_node_gpus` is what an `All` request counts before allocation.
  PodDevices Resolve(const PodInfo& pod, const std::string& node_name, int largest_node_gpus) const;

  const GpuDeviceClasses& classes() const { return classes_; }
  const DeviceDirectory& devices() const { return devices_; }
  size_t claim_count() const { return claims_.size(); }

 private:
  struct ComputeDomainInfo {
    int num_nodes = 0;
    std::string channel_template;
  };
  ClaimGpus ClaimOf(const std::string& pod_namespace, const PodClaimRef& ref, const std::string& node_name,
                    int largest_node_gpus) const;
  // Distinct GPUs among a claim's allocated devices, and their indices on `node_name`.
  void CountAllocated(const ResourceClaim& claim, const std::string& node_name, ClaimGpus* out) const;
  void ApplyComputeDomain(const std::string& key, const Json& object, bool deleted);
  absl::Status ApplyGroupSize(DraKind kind, const std::string& key, const Json& object, bool deleted);

  GpuDeviceClasses classes_;
  DeviceDirectory devices_;
  absl::flat_hash_map<std::string, ResourceClaim> claims_;               // by namespace/name
  absl::flat_hash_map<std::string, ClaimSpec> templates_;                // by namespace/name
  absl::flat_hash_map<std::string, ComputeDomainInfo> compute_domains_;  // by namespace/name
  absl::flat_hash_map<std::string, std::string> channel_templates_;      // namespace/template -> ComputeDomain
  // Gang minCount by "namespace/podgroup" (PodGroup objects) and "namespace/workload/podgroup" (Workloads).
  absl::flat_hash_map<std::string, int> pod_group_sizes_;
  absl::flat_hash_map<std::string, std::vector<std::string>> workload_groups_;  // Workload key -> its keys above
};

}  // namespace rackwise::k8s
