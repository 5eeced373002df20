// See rack_free_gpus.h.
#include "rackwise/rack_free_gpus.h"

#include <algorithm>

#include "placement_indexes.h"

namespace rackwise {

RackFreeGpus RackFreeFor(const Ledger& ledger, RackId rack, int gpus_per_node) {
  const int k = gpus_per_node;
  RackFreeGpus out;
  for (const internal::PlacementIndexes::RackTypeTally& tally : internal::IndexesOf(ledger).rack_tallies(rack)) {
    const int sizes = static_cast<int>(tally.up_by_free.size());
    long long type_free = k > 0 ? 0 : tally.up_free_gpus;
    for (int f = k; k > 0 && f < sizes; ++f) type_free += static_cast<long long>(tally.up_by_free[f]) * k;
    out.usable += type_free;
    long long largest = type_free;
    if (ledger.topology().node_types()[tally.type].nvlink == NvlinkScope::kNode) {
      largest = sizes - 1;
      while (largest > 0 && tally.up_by_free[largest] == 0) --largest;
    }
    out.largest_domain = std::max(out.largest_domain, largest);
  }
  return out;
}

}  // namespace rackwise
