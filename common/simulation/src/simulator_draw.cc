// The simulated hardware's draw. See simulator_draw.h.
#include "simulator_draw.h"

#include <bit>

namespace rackwise::sim {

RealDraw::RealDraw(const Topology& t) : topology_(t) {
  node_gpu_.assign(t.nodes().size(), 0);
  for (const Rack& r : t.racks()) rack_.push_back(r.idle);
  for (const PowerDomain& p : t.power_domains()) pd_.push_back(p.idle);
  readings_.nodes_ok = true;
  readings_.racks_ok = true;
  for (const Node& n : t.nodes()) readings_.nodes.push_back({n.name, 0, 0});
}

void RealDraw::Add(const Ledger& ledger, const Allocation& a, Milliwatts measured_per_gpu, int sign) {
  for (const NodeGpus& ng : a.nodes) {
    const Milliwatts per_gpu = measured_per_gpu > 0 ? measured_per_gpu : ledger.PerGpu(a, ng.node);
    const Milliwatts w = sign * GpuCount(ng.gpus) * per_gpu;
    const RackId r = topology_.nodes()[ng.node].rack;
    node_gpu_[ng.node] += w;
    // Milliwatts to watts and back (MeasureRacks) is exact for any draw the bounds allow.
    readings_.nodes[ng.node].watts = MilliwattsToWatts(node_gpu_[ng.node]);
    rack_[r] += w;
    for (PowerDomainId p : topology_.racks()[r].power_chain) pd_[p] += w;
  }
}

}  // namespace rackwise::sim
