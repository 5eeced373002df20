// The power ceiling of a trace replay. See SimPowerCeiling in rackwise/simulator.h for the argument.
#include <algorithm>
#include <vector>

#include "rackwise/power_rollup.h"
#include "rackwise/simulator.h"

namespace rackwise {

double SimPowerCeiling(const Topology& t, const std::vector<TraceJob>& jobs) {
  if (t.total_gpus() <= 0) return 0;
  // A job that declares no draw uses its node type's; the lowest of them keeps the bound an upper bound.
  Milliwatts default_w = 0;
  for (const NodeType& type : t.node_types())
    if (type.per_gpu > 0) default_w = default_w == 0 ? type.per_gpu : std::min(default_w, type.per_gpu);
  double gpu_s = 0, watt_gpu_s = 0;
  Milliwatts most = 0;
  for (const TraceJob& j : jobs) {
    const Milliwatts w = j.watts_per_gpu > 0 ? WattsToMilliwatts(j.watts_per_gpu) : default_w;
    gpu_s += static_cast<double>(j.gpus) * j.duration;
    watt_gpu_s += static_cast<double>(j.gpus) * j.duration * static_cast<double>(w);
    most = std::max(most, w);
  }
  if (gpu_s <= 0 || watt_gpu_s <= 0) return t.total_gpus();
  // Watts above idle every rack can draw (its room under the cap less the reserve, and no more than all its
  // GPUs at the trace's highest draw), rolled up under every power domain's room.
  const double reserve = t.policy().power_reserve_fraction;
  std::vector<long long> below;
  constexpr Milliwatts kUnit = 1;  // PowerLimitedGpus counts in units of per_gpu: count milliwatts
  const long long watts = PowerLimitedGpus(
      t, kUnit,
      [&](RackId r) {
        long long gpus = 0;
        for (NodeId n : t.racks()[r].nodes) gpus += t.nodes()[n].gpus;
        return gpus * most;
      },
      [&](RackId r) { return UsableCap(t.racks()[r].cap, reserve) - t.racks()[r].idle; },
      [&](PowerDomainId p) { return UsableCap(t.power_domains()[p].cap, reserve) - t.power_domains()[p].idle; },
      &below);
  const double mean_w = watt_gpu_s / gpu_s;
  return std::min<double>(t.total_gpus(), static_cast<double>(watts) / mean_w);
}

}  // namespace rackwise
