// The extender's DRA side: pods' GPUs from ResourceClaims, groups from ComputeDomains and the Workload API, and
// which bound pods to book anew when the objects they depend on change (a claim allocated after its pod was seen
// bound, a restart that lists pods before claims, a shared claim's holder leaving). A shared claim is one
// allocation: the first booked pod using it counts its GPUs (its holder), the others add nothing.
//
// It holds the watched objects (DraObjects), the bound pods that reference claims or pod groups (raw, as the API
// server showed them), each claim's users and holder, the queue of pods to book anew, and each node's
// nvidia.com/gpu.clique label. Booking is the service's: this class says who and what, never books.
//
// Thread safety: none of its own. ExtenderService calls it only with its mutex held.
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "dra_objects.h"
#include "gpu_device_classes.h"
#include "pod_spec.h"
#include "rackwise/ledger.h"
#include "rackwise/topology.h"

namespace rackwise::k8s {

// A pod with its claims and DRA-made groups resolved.
struct ResolvedPod {
  PodInfo info;
  std::vector<std::string> counted_claims;  // the claims whose GPUs info.gpus includes
  GpuMask allocated = 0;                    // GPUs the scheduler allocated to it on its node, when known
};

class DraPods {
 public:
  DraPods(const Topology& topology, GpuDeviceClasses classes);

  // Resolves `raw` on `node_name` ("" before binding). A claim another booked pod holds adds nothing.
  ResolvedPod Resolve(const PodInfo& raw, const std::string& node_name) const;

  // One watched object changed (a malformed one is left out, and its error returned for the log): the bound pods
  // it may concern are queued to be booked anew.
  absl::Status Apply(DraKind kind, const Json& object, bool deleted);
  // A (re)list of one kind: every tracked pod is queued.
  void Replace(DraKind kind, const std::vector<Json>& items);

  // Keeps (or drops) a bound pod that references claims or pod groups, to book it anew on changes.
  void Track(const PodInfo& raw);
  void Untrack(const std::string& key);
  // The tracked pod under `key`, as last seen; null when none.
  const PodInfo* Tracked(const std::string& key) const;

  // `key`'s booking counts `claims` from now on.
  void Hold(const std::vector<std::string>& claims, const std::string& key);
  // A booking undone: `key` no longer holds `claims`.
  void Unhold(const std::vector<std::string>& claims, const std::string& key);
  // A booking released: the claims `key` held pass to another pod using them (queued to be booked anew).
  void PassOn(const std::vector<std::string>& claims, const std::string& key);

  // The queued pods' keys, sorted and unique; the queue is left empty (booking them may queue more).
  std::vector<std::string> TakeQueued();
  bool queued() const { return !reapply_.empty(); }
  void ClearQueue() { reapply_.clear(); }

  void SetClique(NodeId node, const std::string& clique) { node_clique_[node] = clique; }
  // The labelled ones of `nodes` by clique, the clique with the most free GPUs in `ledger` first (ties by name):
  // a ComputeDomain's group is planned within one. Empty when none is labelled.
  std::vector<std::vector<NodeId>> CliquesByFreeGpus(const Ledger& ledger, const std::vector<NodeId>& nodes) const;

 private:
  DraObjects objects_;
  int largest_node_gpus_ = 0;
  absl::flat_hash_map<std::string, PodInfo> pods_;                          // bound pods with claims or a pod group
  absl::flat_hash_map<std::string, std::vector<std::string>> claim_users_;  // claim key -> pod keys
  absl::flat_hash_map<std::string, std::string> claim_holder_;  // claim key -> the pod whose booking counts it
  std::vector<std::string> reapply_;                            // pod keys to book anew
  std::vector<std::string> node_clique_;                        // by NodeId: nvidia.com/gpu.clique
};

}  // namespace rackwise::k8s
