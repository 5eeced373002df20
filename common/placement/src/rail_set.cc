// Chooses a rail set. See rail_set.h.
#include "rail_set.h"

#include <algorithm>
#include <array>
#include <bit>

#include "rackwise/gpu_mask.h"

namespace rackwise::internal {
namespace {

// Bounds the work per decision on very large scopes; the first nodes are the planner's preferred ones.
constexpr size_t kMaxNodes = 512;

bool Usable(const PlacementContext& ctx, NodeId n) { return ctx.Allowed(n) && ctx.NodeCapacity(n) > 0; }

// Every K-subset of `width` indices: a histogram of the nodes' free masks, then superset sums (for each mask,
// how many nodes have at least those indices free), O(nodes + width * 2^width).
RailChoice ExactRailSet(const PlacementContext& ctx, const std::vector<NodeId>& nodes, int k, int width) {
  std::array<int, 1 << kExactRailWidth> holders{};
  const GpuMask all = FullGpuMask(width);
  for (size_t i = 0; i < nodes.size() && i < kMaxNodes; ++i)
    if (Usable(ctx, nodes[i])) ++holders[ctx.ledger().free_gpus(nodes[i]) & all];
  for (int bit = 0; bit < width; ++bit)
    for (GpuMask m = 0; m <= all; ++m)
      if ((m & (GpuMask{1} << bit)) == 0) holders[m] += holders[m | (GpuMask{1} << bit)];
  RailChoice best;
  for (GpuMask s = 0; s <= all; ++s)
    if (GpuCount(s) == k && holders[s] > best.holders) best = {s, holders[s]};
  return best;
}

// Wider nodes: the aligned blocks (0..K-1, K..2K-1, ...) and the lowest free K of the first nodes.
RailChoice SampledRailSet(const PlacementContext& ctx, const std::vector<NodeId>& nodes, int k, int width) {
  std::vector<GpuMask> sets;
  for (int start = 0; start + k <= width; start += k) sets.push_back(((GpuMask{1} << k) - 1) << start);
  for (size_t i = 0; i < nodes.size() && i < 16; ++i)
    if (const GpuMask s = LowestGpus(ctx.ledger().free_gpus(nodes[i]), k); GpuCount(s) == k) sets.push_back(s);
  RailChoice best;
  for (GpuMask s : sets) {
    int count = 0;
    for (size_t i = 0; i < nodes.size() && i < kMaxNodes; ++i)
      if (Usable(ctx, nodes[i]) && (s & ~ctx.ledger().free_gpus(nodes[i])) == 0) ++count;
    if (count > best.holders || (count == best.holders && count > 0 && s < best.set)) best = {s, count};
  }
  return best;
}

}  // namespace

RailChoice ChooseRailSet(const PlacementContext& ctx, const std::vector<NodeId>& nodes) {
  const int k = ctx.k();
  const int width = ctx.topology().node_types()[ctx.type()].gpus;
  if (k <= 0 || k >= width || ctx.gpus() <= k) return {};
  return width <= kExactRailWidth ? ExactRailSet(ctx, nodes, k, width) : SampledRailSet(ctx, nodes, k, width);
}

void ShareRails(const Ledger& ledger, std::vector<NodeGpus>* shares) {
  if (shares->size() < 2) return;
  // The largest share, the lowest node id among equals (so that the choice does not depend on the order).
  auto largest = std::max_element(shares->begin(), shares->end(), [](const NodeGpus& a, const NodeGpus& b) {
    const int ca = GpuCount(a.gpus), cb = GpuCount(b.gpus);
    return ca != cb ? ca < cb : a.node > b.node;
  });
  const GpuMask rails = largest->gpus;
  for (NodeGpus& share : *shares) {
    if ((share.gpus & ~rails) == 0) continue;
    const int count = GpuCount(share.gpus);
    const GpuMask free = ledger.free_gpus(share.node);
    const GpuMask on_rails = LowestGpus(free & rails, count);
    share.gpus = on_rails | LowestGpus(free & ~rails, count - GpuCount(on_rails));
  }
}

}  // namespace rackwise::internal
