// Capacity now, from the power groups. See capacity_now.h.
#include "capacity_now.h"

#include <algorithm>
#include <vector>

#include "rackwise/power_rollup.h"
#include "request_setup.h"

namespace rackwise::internal {
namespace {

long long SharesOf(const PlacementRequest& r, absl::Span<const int> nodes_by_free) {
  long long shares = 0;
  for (int f = 0; f < static_cast<int>(nodes_by_free.size()); ++f)
    shares += static_cast<long long>(nodes_by_free[f]) * NodeShareOf(r, f);
  return shares;
}

long long RackShares(const Ledger& l, const PlacementRequest& r, RackId rack, NodeTypeId type) {
  for (const Ledger::RackTypeTally& tally : l.rack_tallies(rack))
    if (tally.type == type) return SharesOf(r, tally.up_by_free);
  return 0;
}

// What every power group gives (group_gpus, kNoId for the racks under no domain), limited by every power domain
// above it.
template <typename GroupGpus>
long long RollUp(const Ledger& l, Milliwatts per_gpu, GroupGpus group_gpus) {
  const Topology& t = l.topology();
  const double reserve = t.policy().power_reserve_fraction;
  std::vector<long long> below(t.power_domains().size(), 0);
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(below.size()); ++p) below[p] = group_gpus(p);
  return group_gpus(kNoId) + RollUpPowerDomains(
                                 t, per_gpu, [&](PowerDomainId p) { return l.PowerDomainRoom(p, reserve); }, &below);
}

}  // namespace

long long CapacityNow(const Ledger& l, const PlacementRequest& r, NodeTypeId type) {
  const Topology& t = l.topology();
  if (ShareGranule(r) > t.node_types()[type].gpus) return 0;
  const Milliwatts per_gpu = PerGpuFor(t, r, type);
  const double reserve = t.policy().power_reserve_fraction;
  return RollUp(l, per_gpu, [&](PowerDomainId group) -> long long {
    const long long shares = SharesOf(r, l.GroupFreeHistogram(group, type));
    if (shares == 0 || per_gpu <= 0) return shares;
    // When the least room of the group powers more GPUs than any of its racks holds free, no rack's room binds.
    if (l.GroupLeastRackRoom(group) / per_gpu >= l.GroupMaxRackFree(group)) return shares;
    long long gpus = 0;
    for (RackId rack : l.GroupRacks(group))
      gpus += std::min<long long>(RackShares(l, r, rack, type),
                                  std::max<Milliwatts>(0, l.RackRoom(rack, reserve)) / per_gpu);
    return gpus;
  });
}

long long CapacityNowAtMost(const Ledger& l, const PlacementRequest& r, NodeTypeId type) {
  const Topology& t = l.topology();
  if (ShareGranule(r) > t.node_types()[type].gpus) return 0;
  return RollUp(l, PerGpuFor(t, r, type),
                [&](PowerDomainId group) { return SharesOf(r, l.GroupFreeHistogram(group, type)); });
}

}  // namespace rackwise::internal
