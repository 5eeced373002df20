// The core's answer to a PlacementRequest: a decision (where) or a refusal (why not, node by node).
// Like kube-scheduler's Filter status, "does not fit" is a normal answer, not an error.
#pragma once

#include <array>
#include <string>
#include <variant>
#include <vector>

#include "rackwise/allocation.h"
#include "rackwise/topology.h"

namespace rackwise {

struct RackPower {
  RackId rack = kNoId;
  Milliwatts added = 0;  // what this placement adds to the rack's draw
};

struct PlacementDecision {
  std::vector<NodeGpus> nodes;   // ordered by node id
  Milliwatts per_gpu = 0;        // watts charged per GPU (the request's or the node type's)
  int domains = 0;               // NVLink domains used
  int min_domains = 0;           // the fewest the cluster can give the job over its node types, under the
                                 // described caps (Placer::FewestDomains): what `required` insists on
  std::vector<RackPower> racks;  // ordered by rack id
  bool rail_aligned = true;      // the same GPU indices on every node
  int scalable_units = 0;

  // The allocation to commit to a ledger.
  Allocation ToAllocation(const std::string& id) const;
};

// Why a node cannot take (a share of) the job. Values index RefusalCounts.
enum class NodeReason {
  kNodeDown,           // "Node down"
  kNodeDrained,        // "Node drained"
  kNotAllowed,         // "Not in the job's node list" / excluded
  kWrongNodeType,      // "Wrong node type"
  kTooFewGpusOnNode,   // "Node has fewer GPUs than gpus_per_node"  (can never fit)
  kInsufficientGpus,   // "Insufficient free GPUs"
  kRackPower,          // "Rack power cap"
  kPowerDomainPower,   // "Power domain cap"
  kNvlinkLocality,     // "NVLink domain too small for a local placement" (node fits, domain does not)
  kNotEnoughTogether,  // "Not enough GPUs together" (node fits alone; the cluster cannot hold the whole job)
  kCount
};
const char* NodeReasonText(NodeReason reason);

struct PlacementRefusal {
  std::array<int, static_cast<int>(NodeReason::kCount)> counts{};  // nodes per reason (each node counted once)
  int total_nodes = 0;
  bool unresolvable = false;  // cannot fit even on this cluster empty and healthy (too big, bad request)
  std::string detail;         // a sentence about the binding constraint, e.g. "rack r07 would need 9.1 kW, 3.2 kW left"

  // "0/512 nodes are available: 400 Insufficient free GPUs, 112 Rack power cap." plus the detail.
  std::string Message() const;
};

using PlacementOutcome = std::variant<PlacementDecision, PlacementRefusal>;

}  // namespace rackwise
