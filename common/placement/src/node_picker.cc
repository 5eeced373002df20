// Chooses nodes and GPU indices inside one NVLink domain. See node_picker.h.
#include "node_picker.h"

#include <algorithm>
#include <bit>

#include "rackwise/gpu_mask.h"

namespace rackwise::internal {

GpuMask PickIndices(GpuMask free, int count, GpuMask rail_set) {
  if (rail_set != 0 && std::popcount(rail_set) == count && (rail_set & ~free) == 0) return rail_set;
  return LowestGpus(free, count);
}

bool PickNodes(const PlacementContext& ctx, DomainId domain, int gpus, GpuMask rail_set, std::vector<NodeGpus>* out) {
  const Ledger& ledger = ctx.ledger();
  const std::vector<NodeId>& members = ctx.topology().domains()[domain].nodes;
  struct Option {
    NodeId node;
    GpuMask free;
    int count;   // free GPUs
    int usable;  // what the node can give: k, or its free GPUs in whole shares
    bool rail_ok;
  };
  std::vector<Option> options;
  options.reserve(members.size());
  for (NodeId n : members) {
    const int usable = ctx.NodeCapacity(n);
    if (usable <= 0) continue;
    const GpuMask free = ledger.free_gpus(n);
    options.push_back({n, free, std::popcount(free), usable, rail_set != 0 && (rail_set & ~free) == 0});
  }
  int remaining = gpus;
  if (ctx.k() > 0) {
    // Every node takes exactly k: rail-set holders first, then the tightest fit, then node order.
    std::sort(options.begin(), options.end(), [](const Option& a, const Option& b) {
      if (a.rail_ok != b.rail_ok) return a.rail_ok;
      if (a.count != b.count) return a.count < b.count;
      return a.node < b.node;
    });
    for (const Option& o : options) {
      if (remaining <= 0) break;
      out->push_back({o.node, PickIndices(o.free, ctx.k(), rail_set)});
      remaining -= ctx.k();
    }
    return remaining <= 0;
  }
  // Any split: the tightest single node that holds the rest; else the node that gives the most, and repeat.
  // With a share size, a node gives its free GPUs in whole shares (`remaining` is a multiple of the share).
  long long usable = 0;
  for (const Option& o : options) usable += o.usable;
  if (usable == remaining) {
    // Every node is taken whole: the loop below would take the largest first (ties in member order) until one is
    // left, in O(nodes^2); the same order, sorted.
    std::stable_sort(options.begin(), options.end(),
                     [](const Option& a, const Option& b) { return a.usable > b.usable; });
    for (const Option& o : options) out->push_back({o.node, PickIndices(o.free, o.usable, 0)});
    return true;
  }
  std::vector<bool> used(options.size(), false);
  while (remaining > 0) {
    int fit = -1, largest = -1;
    for (size_t i = 0; i < options.size(); ++i) {
      if (used[i]) continue;
      const Option& o = options[i];
      if (o.usable >= remaining && (fit < 0 || o.count < options[fit].count)) fit = static_cast<int>(i);
      if (largest < 0 || o.usable > options[largest].usable) largest = static_cast<int>(i);
    }
    const int pick = fit >= 0 ? fit : largest;
    if (pick < 0) return false;
    used[pick] = true;
    const int take = std::min(remaining, options[pick].usable);
    out->push_back({options[pick].node, PickIndices(options[pick].free, take, 0)});
    remaining -= take;
  }
  return true;
}

}  // namespace rackwise::internal
