// Capacity now, from the power groups. See capacity_now.h.
#include "capacity_now.h"

#include <algorithm>
#include <array>
#include <vector>

#include "placement_indexes.h"
#include "rackwise/power_bounds.h"
#include "rackwise/power_rollup.h"
#include "request_setup.h"

namespace rackwise::internal {
namespace {

// What a node gives the job by its free GPU count (NodeShareOf for every count up to kMaxGpusPerNode), so that
// the shares of a histogram are a dot product: it is summed once per power group and node type, and a division
// per entry cost more than the rest of the pass.
class ShareTable {
 public:
  explicit ShareTable(const PlacementRequest& r) {
    for (int f = 0; f <= kMaxGpusPerNode; ++f) share_of_[f] = NodeShareOf(r, f);
  }
  long long SharesOf(absl::Span<const int> nodes_by_free) const {
    long long shares = 0;
    const size_t width = std::min(nodes_by_free.size(), share_of_.size());
    for (size_t f = 0; f < width; ++f) shares += static_cast<long long>(nodes_by_free[f]) * share_of_[f];
    return shares;
  }

 private:
  std::array<int, kMaxGpusPerNode + 1> share_of_{};
};

long long RackShares(const Ledger& l, const ShareTable& shares, RackId rack, NodeTypeId type) {
  for (const PlacementIndexes::RackTypeTally& tally : IndexesOf(l).rack_tallies(rack))
    if (tally.type == type) return shares.SharesOf(tally.up_by_free);
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

// Whether no cap can bind at `per_gpu`: every power domain and (`racks`) every rack powers all the free GPUs
// below it. O(1), from the ledger's kept extremes.
bool NoCapBinds(const Ledger& l, Milliwatts per_gpu, bool racks) {
  if (per_gpu <= 0) return true;  // limits nothing (PowerLimitedGpus)
  if (racks && per_gpu > IndexesOf(l).LeastRackRoomPerFreeGpu()) return false;
  return per_gpu <= IndexesOf(l).LeastPowerDomainRoomPerFreeGpu();
}

long long TypeShares(const Ledger& l, const ShareTable& shares, NodeTypeId type) {
  return shares.SharesOf(IndexesOf(l).type_tally(type).up_by_free);
}

}  // namespace

long long CapacityNow(const Ledger& l, const PlacementRequest& r, NodeTypeId type) {
  const Topology& t = l.topology();
  if (ShareGranule(r) > t.node_types()[type].gpus) return 0;
  const Milliwatts per_gpu = PerGpuFor(t, r, type);
  const double reserve = t.policy().power_reserve_fraction;
  const ShareTable table(r);
  if (NoCapBinds(l, per_gpu, /*racks=*/true)) return TypeShares(l, table, type);
  const PlacementIndexes& indexes = IndexesOf(l);
  return RollUp(l, per_gpu, [&](PowerDomainId group) -> long long {
    const long long shares = table.SharesOf(indexes.GroupFreeHistogram(group, type));
    if (shares == 0 || per_gpu <= 0) return shares;
    // When the least room of the group powers more GPUs than any of its racks holds free, no rack's room binds.
    if (indexes.GroupLeastRackRoom(group) / per_gpu >= indexes.GroupMaxRackFree(group)) return shares;
    long long gpus = 0;
    for (RackId rack : indexes.GroupRacks(group))
      gpus += std::min<long long>(RackShares(l, table, rack, type),
                                  std::max<Milliwatts>(0, l.RackRoom(rack, reserve)) / per_gpu);
    return gpus;
  });
}

namespace {

// The bound by the root power domains, and whether it settles "at most" (the free shares fall short, no power
// domain can bind, or the roots alone fall short): else only the pass over every power domain does.
struct RootsBound {
  long long gpus = 0;
  bool settled = true;
};

RootsBound BoundByRoots(const Ledger& l, const PlacementRequest& r, NodeTypeId type, const ShareTable& table,
                        Milliwatts per_gpu) {
  // Never more than the type's free shares; without a power domain that binds, exactly those.
  const long long shares = TypeShares(l, table, type);
  if (shares < r.gpus || NoCapBinds(l, per_gpu, /*racks=*/false)) return {shares, true};
  // The power domains under none alone: each passes at most its room's worth of the free GPUs below it; settles
  // most jobs a capped cluster cannot hold now.
  const PlacementIndexes& indexes = IndexesOf(l);
  long long roots = table.SharesOf(indexes.GroupFreeHistogram(kNoId, type));
  for (PowerDomainId p : indexes.root_power_domains())
    roots += std::min<long long>(
        indexes.power_domain_free_gpus(p),
        std::max<Milliwatts>(0, l.PowerDomainRoom(p, l.topology().policy().power_reserve_fraction)) / per_gpu);
  const long long bound = std::min(shares, roots);
  return {bound, bound < r.gpus};
}

}  // namespace

long long CapacityNowAtMostByRoots(const Ledger& l, const PlacementRequest& r, NodeTypeId type) {
  const Topology& t = l.topology();
  if (ShareGranule(r) > t.node_types()[type].gpus) return 0;
  return BoundByRoots(l, r, type, ShareTable(r), PerGpuFor(t, r, type)).gpus;
}

long long CapacityNowAtMost(const Ledger& l, const PlacementRequest& r, NodeTypeId type) {
  const Topology& t = l.topology();
  if (ShareGranule(r) > t.node_types()[type].gpus) return 0;
  const Milliwatts per_gpu = PerGpuFor(t, r, type);
  const ShareTable table(r);
  const RootsBound by_roots = BoundByRoots(l, r, type, table, per_gpu);
  if (by_roots.settled) return by_roots.gpus;
  return RollUp(l, per_gpu,
                [&](PowerDomainId group) { return table.SharesOf(IndexesOf(l).GroupFreeHistogram(group, type)); });
}

}  // namespace rackwise::internal
