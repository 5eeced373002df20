// Internal to the placer: which nodes of a chosen NVLink domain, and which GPU indices on each.
// Nodes that have the job's rail set free come first, then the best fit (fewest free GPUs that still hold the
// share), so that whole nodes stay free; without gpus_per_node the share goes on as few nodes as possible.
#pragma once

#include <vector>

#include "placement_context.h"
#include "rackwise/allocation.h"

namespace rackwise::internal {

// Appends the chosen nodes to `out`. `rail_set` (0 = none) names the indices to prefer on every node.
// Returns false if the domain cannot give `gpus` (which the planner's capacity figures rule out).
bool PickNodes(const PlacementContext& ctx, DomainId domain, int gpus, GpuMask rail_set, std::vector<NodeGpus>* out);

// `count` indices out of `free`: `rail_set` if it has that many and all are free, else the lowest free ones.
GpuMask PickIndices(GpuMask free, int count, GpuMask rail_set);

}  // namespace rackwise::internal
