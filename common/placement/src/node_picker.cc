// Chooses nodes and GPU indices inside one NVLink domain. See node_picker.h.
#include "node_picker.h"

#include <algorithm>
#include <bit>

#include "absl/container/inlined_vector.h"
#include "rackwise/gpu_mask.h"

namespace rackwise::internal {

GpuMask PickIndices(GpuMask free, int count, GpuMask rail_set) {
  if (rail_set != 0 && GpuCount(rail_set) == count && (rail_set & ~free) == 0) return rail_set;
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
    int order;  // member order, for ties
  };
  // A domain has tens of nodes (18 in an NVL72 rack): no heap allocation on this path.
  absl::InlinedVector<Option, 32> options;
  for (NodeId n : members) {
    const int usable = ctx.NodeCapacity(n);
    if (usable <= 0) continue;
    const GpuMask free = ledger.free_gpus(n);
    options.push_back({n, free, ledger.free_gpu_count(n), usable, rail_set != 0 && (rail_set & ~free) == 0,
                       static_cast<int>(options.size())});
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
  // Any split: the tightest single node that holds the rest (fewest free GPUs, then member order); else the node
  // that gives the most (the first in member order), and repeat. With a share size, a node gives its free GPUs in
  // whole shares (`remaining` is a multiple of the share). Sorted by what they give, the nodes taken before the
  // last are a prefix, and the nodes that could hold the rest are a prefix of what is left: O(n log n).
  if (remaining <= 0) return true;
  // A stable sort by what they give, spelt as a plain sort with member order as the tie-break: std::stable_sort
  // asks the heap for a buffer on every call.
  std::sort(options.begin(), options.end(), [](const Option& a, const Option& b) {
    return a.usable != b.usable ? a.usable > b.usable : a.order < b.order;
  });
  for (size_t next = 0; next < options.size(); ++next) {
    const Option& largest = options[next];
    if (largest.usable < remaining) {
      out->push_back({largest.node, PickIndices(largest.free, largest.usable, 0)});
      remaining -= largest.usable;
      continue;
    }
    // What a node gives is a function of its free GPUs, so nodes with as many free GPUs give as much and keep their
    // member order (the sort's tie-break): the first with the fewest is the first in member order.
    size_t fit = next;
    for (size_t i = next + 1; i < options.size() && options[i].usable >= remaining; ++i)
      if (options[i].count < options[fit].count) fit = i;
    out->push_back({options[fit].node, PickIndices(options[fit].free, remaining, 0)});
    return true;
  }
  return remaining <= 0;
}

}  // namespace rackwise::internal
