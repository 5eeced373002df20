// The kube-scheduler extender wire format (k8s.io/kube-scheduler/extender/v1), decoded and encoded.
//
// The Go structs carry no json tags, so keys are the Go field names (PascalCase), matched case-insensitively,
// and unset fields arrive as `null`. Answers are written with the upstream spelling. Decoding never throws:
// bad input is an InvalidArgument status naming the field (or the byte offset of a syntax error).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "json_fields.h"

namespace rackwise::k8s {

// Nesting deeper than this is refused before parsing (the parser recurses; a body of 10^6 '[' must not crash).
inline constexpr int kMaxJsonDepth = 64;

// Parses a request body into a DOM, refusing syntax errors, nesting deeper than kMaxJsonDepth and non-objects.
absl::StatusOr<Json> ParseJsonObject(absl::string_view body);

// ExtenderArgs: {"Pod": {...}, "Nodes": NodeList|null, "NodeNames": [..]|null}.
struct ExtenderArgs {
  Json pod = Json::object();           // core/v1 Pod, lowerCamel keys inside
  bool has_node_names = false;         // NodeNames was an array (nodeCacheCapable: true)
  bool has_nodes = false;              // Nodes was a NodeList (nodeCacheCapable: false)
  std::vector<std::string> node_names; // candidate names: NodeNames, or Nodes.items[].metadata.name
  Json nodes;                          // the NodeList as sent (only when has_nodes)
};
absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body);

// ExtenderFilterResult. Feasible names must be a subset of the request's candidates.
struct FilterResult {
  std::vector<std::string> feasible;
  std::map<std::string, std::string> failed;        // FailedNodes: may be retried (preemption, later)
  std::map<std::string, std::string> unresolvable;  // FailedAndUnresolvableNodes: never on this cluster
  std::string error;                                // non-empty: the whole call failed
};
// Answers in the shape of the request: NodeNames when the request had NodeNames, a filtered NodeList in
// `Nodes` when it had a NodeList (upstream reads the matching field), and null for the other.
std::string EncodeFilterResult(const FilterResult& result, const ExtenderArgs& args);

// HostPriorityList: a bare array of {"Host": name, "Score": 0..10}.
struct HostPriority {
  std::string host;
  int64_t score = 0;
};
inline constexpr int64_t kMaxExtenderPriority = 10;
std::string EncodeHostPriorityList(const std::vector<HostPriority>& priorities);

// ExtenderBindingArgs / ExtenderBindingResult.
struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};
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
