// The steered limits document GET /limits answers. See published_limits.h.
#include "published_limits.h"

#include <algorithm>

namespace rackwise::k8s {

LimitsDocument PublishedLimits::Publish(const Ledger& ledger, const OversubscribedAllocations& oversubscribed,
                                        const absl::flat_hash_map<std::string, Milliwatts>& steered,
                                        const absl::flat_hash_map<std::string, std::vector<SteeredPod>>& pods_of) {
  LimitsDocument document;
  for (const Allocation* a : ledger.Allocations()) {
    auto pods = pods_of.find(a->id);
    if (pods == pods_of.end()) continue;  // an operator's allocation or a free slot: no GPU to limit
    SteeredLimit entry;
    entry.allocation = a->id;
    // The GPUs' limit is what the job declared, also when the ledger counts it at less (oversubscribed).
    const OversubscribedAllocation* over = oversubscribed.Find(a->id);
    entry.declared_milliwatts_per_gpu = over != nullptr ? over->declared : ledger.PerGpu(*a, a->nodes.front().node);
    auto target = steered.find(a->id);
    entry.milliwatts_per_gpu = target == steered.end() ? entry.declared_milliwatts_per_gpu
                                                       : std::min(target->second, entry.declared_milliwatts_per_gpu);
    entry.pods = pods->second;
    document.allocations.push_back(std::move(entry));
  }
  // The generation moves whenever a target or a pod changes, so an agent (or an operator) sees that something
  // did without comparing entries.
  if (document.allocations != published_.allocations) {
    published_.allocations = document.allocations;
    ++published_.generation;
  }
  document.generation = published_.generation;
  return document;
}

}  // namespace rackwise::k8s
