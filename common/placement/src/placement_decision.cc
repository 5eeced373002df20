// Text for refusals: what an operator reads in squeue, kube-scheduler events and `rackwise explain`.
#include "rackwise/placement_decision.h"

#include "absl/strings/str_cat.h"

namespace rackwise {

const char* NodeReasonText(NodeReason reason) {
  switch (reason) {
    case NodeReason::kNodeDown: return "Node down";
    case NodeReason::kNodeDrained: return "Node drained";
    case NodeReason::kNotAllowed: return "Not in the job's node list";
    case NodeReason::kWrongNodeType: return "Wrong node type";
    case NodeReason::kTooFewGpusOnNode: return "Node has fewer GPUs than gpus_per_node";
    case NodeReason::kInsufficientGpus: return "Insufficient free GPUs";
    case NodeReason::kRackPower: return "Rack power cap";
    case NodeReason::kPowerDomainPower: return "Power domain cap";
    case NodeReason::kNvlinkLocality: return "NVLink domain lacks room for a local placement";
    case NodeReason::kNotEnoughTogether: return "Not enough GPUs together";
    case NodeReason::kCount: break;
  }
  return "Unknown";
}

std::string PlacementRefusal::Message() const {
  std::string out = absl::StrCat("0/", total_nodes, " nodes are available");
  const char* sep = ": ";
  for (int i = 0; i < static_cast<int>(NodeReason::kCount); ++i) {
    if (counts[i] == 0) continue;
    absl::StrAppend(&out, sep, counts[i], " ", NodeReasonText(static_cast<NodeReason>(i)));
    sep = ", ";
  }
  absl::StrAppend(&out, ".");
  if (!detail.empty()) absl::StrAppend(&out, " ", detail);
  return out;
}

}  // namespace rackwise
