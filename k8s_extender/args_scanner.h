// A fast, strict reader for the top level of ExtenderArgs. kube-scheduler sends up to 5,000+ node names per
// call; building a JSON DOM for them costs more than placing the pod. This scanner walks the top-level object
// itself, reads `NodeNames` straight into strings, and hands every other value (Pod, Nodes, unknown keys) to
// nlohmann-json, which validates it. Keys match case-insensitively (Go), null equals absent, syntax errors
// name their byte offset. Internal to the extender's wire codecs.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "candidate_nodes.h"
#include "json_fields.h"

namespace rackwise::k8s::internal {

struct TopLevelArgs {
  bool has_node_names = false;
  std::shared_ptr<const CandidateNodes> node_names;  // set when has_node_names
  Json pod;                                          // null when absent
  Json nodes;                                        // null when absent
};

// Reads {"Pod": .., "Nodes": .., "NodeNames": [..], ...}, refusing values nested deeper than kMaxJsonDepth.
// With a cache, a NodeNames array seen before is taken from it, and a new one is added to it.
absl::Status ScanExtenderArgs(absl::string_view body, CandidateNodeCache* cache, TopLevelArgs* out);

}  // namespace rackwise::k8s::internal
