// See linear_scan_placer.h.
#include "linear_scan_placer.h"

#include <bit>

namespace rackwise::bench {
namespace {

GpuMask Lowest(GpuMask free, int n) {
  GpuMask mask = 0;
  for (int i = 0; i < n && free; ++i) {
    const GpuMask low = free & (~free + 1);
    mask |= low;
    free &= ~low;
  }
  return mask;
}

// Takes GPUs from `nodes` in order, under each rack's headroom, until `remaining` is covered.
void TakeInOrder(const Ledger& ledger, const PlacementRequest& r, const std::vector<NodeId>& nodes,
                 std::vector<Milliwatts>* taken, int* remaining, std::vector<NodeGpus>* out) {
  const Topology& t = ledger.topology();
  for (NodeId n : nodes) {
    if (*remaining <= 0) return;
    const GpuMask free = ledger.free_gpus(n);
    const int want = r.gpus_per_node > 0 ? r.gpus_per_node : std::min(*remaining, std::popcount(free));
    if (want == 0 || std::popcount(free) < want) continue;
    const RackId rack = t.nodes()[n].rack;
    const Milliwatts w = want * t.type_of(n).per_gpu;
    if (ledger.RackHeadroom(rack) - (*taken)[rack] < w) continue;
    (*taken)[rack] += w;
    out->push_back({n, Lowest(free, want)});
    *remaining -= want;
  }
}

}  // namespace

std::optional<std::vector<NodeGpus>> LinearScanBestFit(const Ledger& ledger, const PlacementRequest& r) {
  const Topology& t = ledger.topology();
  DomainId best = kNoId;
  int best_free = 1 << 30;
  for (DomainId d = 0; d < static_cast<DomainId>(t.domains().size()); ++d) {
    int free = 0;
    for (NodeId n : t.domains()[d].nodes) {
      const int f = std::popcount(ledger.free_gpus(n));
      free += r.gpus_per_node > 0 ? (f >= r.gpus_per_node ? r.gpus_per_node : 0) : f;
    }
    const RackId rack = t.domains()[d].rack;
    const Milliwatts per_gpu = t.node_types()[t.domains()[d].type].per_gpu;
    const int powered = per_gpu > 0 ? static_cast<int>(ledger.RackHeadroom(rack) / per_gpu) : free;
    const int usable = std::min(free, powered);
    if (usable >= r.gpus && free < best_free) {
      best = d;
      best_free = free;
    }
  }
  std::vector<NodeGpus> out;
  std::vector<Milliwatts> taken(t.racks().size(), 0);
  int remaining = r.gpus;
  if (best != kNoId) {
    TakeInOrder(ledger, r, t.domains()[best].nodes, &taken, &remaining, &out);
  } else {
    std::vector<NodeId> all(t.nodes().size());
    for (NodeId n = 0; n < static_cast<NodeId>(all.size()); ++n) all[n] = n;
    TakeInOrder(ledger, r, all, &taken, &remaining, &out);
  }
  if (remaining > 0) return std::nullopt;
  return out;
}

std::optional<std::vector<NodeGpus>> LinearScanFirstFit(const Ledger& ledger, const PlacementRequest& r) {
  const Topology& t = ledger.topology();
  std::vector<NodeId> all(t.nodes().size());
  for (NodeId n = 0; n < static_cast<NodeId>(all.size()); ++n) all[n] = n;
  std::vector<NodeGpus> out;
  std::vector<Milliwatts> taken(t.racks().size(), 0);
  int remaining = r.gpus;
  TakeInOrder(ledger, r, all, &taken, &remaining, &out);
  if (remaining > 0) return std::nullopt;
  return out;
}

}  // namespace rackwise::bench
