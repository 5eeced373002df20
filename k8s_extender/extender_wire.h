// The kube-scheduler extender wire format (k8s.io/kube-scheduler/extender/v1), decoded and encoded.
//
// The Go structs carry no json tags, so keys are the Go field names (PascalCase), matched case-insensitively,
// and unset fields arrive as `null`. Answers are written with the upstream spelling. Decoding never throws:
// bad input is an InvalidArgument status naming the field (or the byte offset of a syntax error).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "candidate_nodes.h"
#include "json_fields.h"
#include "pod_binder.h"

namespace rackwise::k8s {

// ExtenderArgs: {"Pod": {...}, "Nodes": NodeList|null, "NodeNames": [..]|null}.
struct ExtenderArgs {
  Json pod = Json::object();    // core/v1 Pod, lowerCamel keys inside
  bool has_node_names = false;  // NodeNames was an array (nodeCacheCapable: true)
  bool has_nodes = false;       // Nodes was a NodeList (nodeCacheCapable: false)
  // The candidates: NodeNames, or Nodes.items[].metadata.name in item order. Shared with the cache.
  std::shared_ptr<const CandidateNodes> candidates;
  Json nodes;  // the NodeList as sent (only when has_nodes)

  const CandidateNodes& candidate_nodes() const;
  // For tests and tools: candidates given as names, as if sent in NodeNames.
  void SetNodeNames(std::vector<std::string> names);
};
// With a cache, NodeNames arrays seen before are not scanned again (see candidate_nodes.h).
absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body, CandidateNodeCache* cache = nullptr);

// ExtenderFilterResult, by candidate index: answers echo the request's names, so a 5,000-node answer copies
// no strings. Feasible indexes keep the request's order.
struct FilterResult {
  struct Failure {
    uint32_t candidate;
    uint32_t reason;  // index into reasons
  };
  std::vector<uint32_t> feasible;
  std::vector<Failure> failed;        // FailedNodes: may be retried (preemption, later)
  std::vector<Failure> unresolvable;  // FailedAndUnresolvableNodes: never on this cluster
  std::vector<std::string> reasons;   // the distinct reason texts
  std::string error;                  // non-empty: the whole call failed

  uint32_t AddReason(std::string text);
};
// Answers in the shape of the request: NodeNames when the request had NodeNames, a filtered NodeList in
// `Nodes` when it had a NodeList (upstream reads the matching field), and null for the other.
std::string EncodeFilterResult(const FilterResult& result, const ExtenderArgs& args);
// The feasible names, for tests and tools.
std::vector<std::string> FeasibleNames(const FilterResult& result, const ExtenderArgs& args);

// HostPriorityList: a bare array of {"Host": name, "Score": 0..10}, one per candidate (scores[i] for
// candidate i).
inline constexpr int64_t kMaxExtenderPriority = 10;
std::string EncodeHostPriorityList(const CandidateNodes& candidates, const std::vector<int>& scores);

// ExtenderBindingArgs (BindingArgs, pod_binder.h) / ExtenderBindingResult.
absl::StatusOr<BindingArgs> ParseBindingArgs(absl::string_view body);
std::string EncodeBindingResult(absl::string_view error);

// ExtenderPreemptionArgs / ExtenderPreemptionResult. Victims are reduced to pod UIDs (MetaVictims), which is
// what upstream sends with nodeCacheCapable and what it reads back.
struct MetaVictims {
  std::vector<std::string> pod_uids;
  int64_t num_pdb_violations = 0;
};
struct PreemptionArgs {
  Json pod = Json::object();
  std::map<std::string, MetaVictims> victims;  // node name -> victims
};
absl::StatusOr<PreemptionArgs> ParsePreemptionArgs(absl::string_view body);
std::string EncodePreemptionResult(const std::map<std::string, MetaVictims>& victims);

// An answer for a request that could not be decoded, in the verb's result shape: for filter and bind the
// `Error` field; prioritize and preempt have none, so the caller answers with an HTTP error instead.
std::string EncodeFilterError(absl::string_view error);

}  // namespace rackwise::k8s
