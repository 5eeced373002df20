// Internal to the placer: which GPU indices (rails) a partial-node job on several nodes should use.
//
// In a rail-optimised fabric GPU i of every node of a scalable unit hangs off rail switch i, so a job whose
// nodes all use the same indices talks over one switch hop; mixed indices cross the spine (or detour over
// NVLink first). The choice: the K indices free on the most of the candidate nodes.
#pragma once

#include <vector>

#include "placement_context.h"
#include "rackwise/allocation.h"

namespace rackwise::internal {

struct RailChoice {
  GpuMask set = 0;  // the K indices every node should use; 0 when rail alignment does not apply
  int holders = 0;  // how many of the nodes (usable by the job) have all of them free
};

// The K GPU indices (K = gpus_per_node) free on the most of `nodes`, lowest indices on ties. Exact for nodes
// of up to kExactRailWidth GPUs (every K-subset is counted); wider nodes try the aligned blocks and each
// node's lowest free K. {0, 0} when rail alignment does not apply (no gpus_per_node, whole nodes, one node).
RailChoice ChooseRailSet(const PlacementContext& ctx, const std::vector<NodeId>& nodes);

inline constexpr int kExactRailWidth = 8;

// Any-split jobs (no gpus_per_node): the nodes' shares differ in size, so "the same indices" means the smaller
// shares use rails the largest one (the lowest node id among equals) uses (an 8 + 4 split on rails 0-7 and 0-3 is
// aligned). Moves each smaller share onto the largest share's indices as far as its free GPUs allow; which nodes and
// how many GPUs on each are unchanged.
void ShareRails(const Ledger& ledger, std::vector<NodeGpus>* shares);

}  // namespace rackwise::internal
