// Small helpers on allocations and decisions.
#include "rackwise/allocation.h"

#include <bit>

#include "rackwise/placement_decision.h"

namespace rackwise {

int Allocation::gpu_count() const {
  int n = 0;
  for (const NodeGpus& ng : nodes) n += GpuCount(ng.gpus);
  return n;
}

Allocation PlacementDecision::ToAllocation(const std::string& id) const { return Allocation{id, nodes, per_gpu}; }

}  // namespace rackwise
