// What rackwise reads from a core/v1 Pod: identity, GPUs requested, the rackwise annotations, and which group
// (gang) it belongs to. Group sources, in order of precedence:
//   1. rackwise.io/group + rackwise.io/group-size (annotations or labels);
//   2. JobSet: label jobset.sigs.k8s.io/jobset-name (+ replicatedjob-name); size = the group-size annotation
//      if given, else jobset.sigs.k8s.io/replicatedjob-replicas x rackwise.io/pods-per-job (default 1);
//   3. the Workload API (scheduling.k8s.io): spec.schedulingGroup.podGroupName (the PodGroup object; 1.36 on),
//      or 1.35's spec.workloadRef {name, podGroup, podGroupReplicaKey} (each replica key its own gang); size =
//      group-size, else the gang minCount of the PodGroup or of the Workload's pod group (read by the extender
//      from the API server, see dra_objects.h);
//   4. scheduler-plugins PodGroup: label scheduling.x-k8s.io/pod-group (or the older
//      pod-group.scheduling.sigs.k8s.io); size = annotation scheduling.x-k8s.io/min-member, or group-size.
// A ComputeDomain (NVIDIA's multi-node NVLink domain) found through the pod's claims outranks 2-4; the extender
// resolves it, since it needs the ComputeDomain objects (dra_objects.h).
// A group of size 1 is an ordinary pod. Parsing never throws; bad values are InvalidArgument naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "json_fields.h"
#include "rackwise/placement_policy.h"

namespace rackwise::k8s {

inline constexpr char kGpuResource[] = "nvidia.com/gpu";
inline constexpr char kNvlinkAnnotation[] = "rackwise.io/nvlink";
inline constexpr char kGpuWattsAnnotation[] = "rackwise.io/gpu-watts";
inline constexpr char kGroupKey[] = "rackwise.io/group";
inline constexpr char kGroupSizeKey[] = "rackwise.io/group-size";
inline constexpr char kPodsPerJobKey[] = "rackwise.io/pods-per-job";
// Groups larger than this are refused as malformed (a guard against "group-size: 1e9").
inline constexpr int kMaxGroupSize = 100'000;

// One entry of spec.resourceClaims: a named ResourceClaim, or one made from a template for this pod (whose name
// the API server writes in status.resourceClaimStatuses once it exists).
struct PodClaimRef {
  std::string name;           // the entry's name inside the pod
  std::string claim;          // the ResourceClaim's name; "" while a template's claim is not created yet
  std::string template_name;  // resourceClaimTemplateName; "" for a named claim
};

// Where a pod's group came from (see the precedence above).
enum class GroupSource {
  kNone,           // no group
  kAnnotation,     // rackwise.io/group
  kJobSet,         // jobset.sigs.k8s.io labels
  kWorkload,       // the Workload API's pod group
  kPodGroup,       // scheduler-plugins PodGroup label
  kComputeDomain,  // a ComputeDomain's channel claim (set by the extender's DRA view)
};

struct PodInfo {
  std::string name;
  std::string namespace_;  // "default" when unset
  std::string uid;
  std::string node_name;                // spec.nodeName: set once bound
  std::string phase;                    // status.phase
  bool deleting = false;                // metadata.deletionTimestamp set
  int gpus = 0;                         // effective nvidia.com/gpu request (plus claimed GPUs, once resolved)
  std::vector<PodClaimRef> claims;      // spec.resourceClaims
  std::string extended_resource_claim;  // status.extendedResourceClaimStatus: the claim behind nvidia.com/gpu
  std::optional<Locality> locality;     // rackwise.io/nvlink
  double watts_per_gpu = 0;             // rackwise.io/gpu-watts; 0: the node type's default
  std::string group;                    // "<namespace>/<kind>/<name>"; empty: not part of a group
  int group_size = 1;
  int64_t priority = 0;       // spec.priority (set by the admission controller from priorityClassName)
  int64_t start_unix_ms = 0;  // status.startTime; 0: not started, or not shown by the API server yet
  GroupSource group_source = GroupSource::kNone;
  int annotated_group_size = 0;  // rackwise.io/group-size; 0 when unset
  // The Workload API pod group the pod names ("<namespace>/<name>"), kept even when its size is not known yet
  // (group stays empty until the PodGroup object gives minCount).
  std::string workload_pod_group;
  // The group's name under "<namespace>/workload/": the pod group, with 1.35's replica key when set.
  std::string workload_group;

  // "namespace/name", the key pods are booked under.
  std::string Key() const { return namespace_ + "/" + name; }
  // Claims, a DRA-backed nvidia.com/gpu or a Workload API pod group: the extender resolves these (dra_objects.h).
  bool HasDraReferences() const {
    return !claims.empty() || !extended_resource_claim.empty() || !workload_pod_group.empty();
  }
  // A pod that holds its node's GPUs: bound, and neither finished nor being deleted.
  bool Holds() const { return !node_name.empty() && phase != "Succeeded" && phase != "Failed"; }
};

// Reads a Pod object (as in ExtenderArgs.Pod or a watch event).
absl::StatusOr<PodInfo> ParsePod(const Json& pod);

// A resource quantity that must be a whole number ("8", 8, "8.0" are 8; "500m" or "1.5" are errors).
absl::StatusOr<int64_t> ParseWholeQuantity(const Json& value);

}  // namespace rackwise::k8s
