// Builds refusals. See refusal_builder.h.
#include "refusal_builder.h"

#include "capacity_now.h"
#include "placement_context.h"
#include "rackwise/power_rollup.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "placement_indexes.h"
#include "rackwise/telemetry.h"

namespace rackwise::internal {
namespace {

std::string Kw(Milliwatts mw) { return absl::StrFormat("%.1f kW", static_cast<double>(mw) / 1e6); }

// The most GPUs the job could get of one node type now (healthy nodes, free GPUs, power left), visiting every
// node: any request, a node list included (CapacityNow answers unrestricted ones from the power groups).
long long CapacityByNode(const Ledger& l, const PlacementRequest& r, const RequestSetup& s, NodeTypeId type) {
  const Topology& t = l.topology();
  const double reserve = t.policy().power_reserve_fraction;
  std::vector<long long> rack_gpus(t.racks().size(), 0);
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    const Node& node = t.nodes()[n];
    if (node.type != type || (!s.allowed.empty() && !s.allowed[n]) || ShareGranule(r) > node.gpus) continue;
    if (l.node_health(n) != NodeHealth::kUp) continue;
    rack_gpus[node.rack] += NodeShareOf(r, l.free_gpu_count(n));
  }
  std::vector<long long> below;
  return PowerLimitedGpus(
      t, PerGpuFor(t, r, type), [&](RackId k) { return rack_gpus[k]; },
      [&](RackId k) { return l.RackRoom(k, reserve); }, [&](PowerDomainId p) { return l.PowerDomainRoom(p, reserve); },
      &below);
}

// Nodes per reason, and per rack the free GPUs of nodes that fail on nothing but power (or on nothing).
struct ReasonTally {
  std::array<int, static_cast<int>(NodeReason::kCount)> counts{};
  std::vector<int> rack_free;
};

// Every node visited: any request (a node list included).
ReasonTally TallyByNode(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s, NodeReason usable) {
  const Topology& t = ledger.topology();
  ReasonTally out;
  out.rack_free.assign(t.racks().size(), 0);
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    std::optional<NodeReason> why = NodeBlock(ledger, r, s, n);
    if (!why || *why == NodeReason::kRackPower || *why == NodeReason::kPowerDomainPower)
      out.rack_free[t.nodes()[n].rack] += ledger.free_gpu_count(n);
    out.counts[static_cast<int>(why.value_or(usable))]++;
  }
  return out;
}

Milliwatts ChainRoomOf(const Topology& t, absl::Span<const Milliwatts> chain, RackId rack) {
  const PowerDomainId p = t.racks()[rack].power_domain;
  return p == kNoId ? std::numeric_limits<Milliwatts>::max() : chain[p];
}

// Whether the request can use nodes of this type at all (else every such node counts under one reason).
bool TypeTakesShares(const Topology& t, const PlacementRequest& r, const RequestSetup& s, NodeTypeId type) {
  return std::find(s.types.begin(), s.types.end(), type) != s.types.end() &&
         ShareGranule(r) <= t.node_types()[type].gpus;
}

// The same counts from the ledger's tallies, in NodeBlock's order of reasons; unrestricted requests. Reasons that
// do not depend on power come from the per-type tallies; nodes that fail on power only are split per power group:
// the racks whose own room is short (one binary search in the group), else the power domains above.
ReasonTally TallyByGroup(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s, NodeReason usable) {
  const Topology& t = ledger.topology();
  const PlacementIndexes& indexes = IndexesOf(ledger);
  ReasonTally out;
  auto count = [&out](NodeReason why, long long nodes) {
    out.counts[static_cast<int>(why)] += static_cast<int>(nodes);
  };
  const int least = ShareGranule(r);
  for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t.node_types().size()); ++type) {
    const PlacementIndexes::RackTypeTally& tally = indexes.type_tally(type);
    if (std::find(s.types.begin(), s.types.end(), type) == s.types.end()) {
      count(NodeReason::kWrongNodeType, tally.nodes);
      continue;
    }
    if (least > t.node_types()[type].gpus) {
      count(NodeReason::kTooFewGpusOnNode, tally.nodes);
      continue;
    }
    count(NodeReason::kNodeDown, tally.down);
    count(NodeReason::kNodeDrained, tally.drained);
    for (int f = 0; f < least; ++f) count(NodeReason::kInsufficientGpus, tally.up_by_free[f]);
  }
  std::vector<std::pair<NodeTypeId, Milliwatts>> needs;  // one share's watts, per type that takes shares
  Milliwatts most_need = 0;
  for (NodeTypeId type : s.types) {
    if (least > t.node_types()[type].gpus) continue;
    needs.push_back({type, least * PerGpuFor(t, r, type)});
    most_need = std::max(most_need, needs.back().second);
  }
  // Where the least room of any rack and of any power domain with free GPUs powers one share, power blocks no
  // node: the per-type tallies give the rest, without a pass over the power groups.
  if (most_need <= std::min(indexes.LeastRackRoomWithFree(), indexes.LeastPowerDomainRoomWithFree())) {
    for (const auto& [type, need] : needs) {
      const std::vector<int>& by_free = indexes.type_tally(type).up_by_free;
      for (int f = least; f < static_cast<int>(by_free.size()); ++f) count(usable, by_free[f]);
    }
    return out;
  }
  for (const auto& [type, need] : needs) {
    const PlacementIndexes::PowerShortNodes nodes = indexes.CountPowerShortNodes(type, least, need);
    count(NodeReason::kRackPower, nodes.rack_short);
    count(NodeReason::kPowerDomainPower, nodes.chain_short);
    count(usable, nodes.powered);
  }
  return out;
}

// Free GPUs of the rack on nodes that fail on nothing but power (or on nothing), from its tallies.
int RackFreeByTally(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s, RackId rack) {
  const int least = ShareGranule(r);
  long long free = 0;
  for (const PlacementIndexes::RackTypeTally& tally : IndexesOf(ledger).rack_tallies(rack)) {
    if (!TypeTakesShares(ledger.topology(), r, s, tally.type)) continue;
    free += tally.up_free_gpus;
    for (int f = 0; f < least; ++f) free -= static_cast<long long>(f) * tally.up_by_free[f];
  }
  return static_cast<int>(free);
}

// The rack that holds the most free GPUs it (or a power domain above it) cannot power for this job; ties go to the
// lowest id. Racks are offered in any order.
class PowerShortfall {
 public:
  // The ledger's chain rooms are asked only when a rack or group is looked at (worked out once per change).
  PowerShortfall(const Ledger& ledger, const PlacementRequest& r)
      : ledger_(ledger), indexes_(IndexesOf(ledger)), r_(r) {
    const Topology& t = ledger.topology();
    for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t.node_types().size()); ++type)
      most_per_gpu_ = std::max(most_per_gpu_, PerGpuFor(t, r, type));
  }
  int best_free() const { return best_free_; }
  RackId best_rack() const { return best_rack_; }
  void Consider(RackId rack, int free) {
    if (free <= 0 || free < best_free_ || (free == best_free_ && rack > best_rack_)) return;
    const Topology& t = ledger_.topology();
    const Milliwatts left = std::min(ledger_.RackRoom(rack, t.policy().power_reserve_fraction),
                                     ChainRoomOf(t, indexes_.ChainRooms(), rack));
    if (Need(rack, free) <= left) return;
    best_free_ = free;
    best_rack_ = rack;
  }
  // Whether no rack anywhere can fall short: every rack powers its free GPUs (or the least room of any rack with
  // free GPUs powers the most free GPUs in one rack), and every power domain powers all the free GPUs below it.
  // O(1): most refusals where power does not bind end here.
  bool NoneShortAnywhere() const {
    const bool racks_power_all = most_per_gpu_ <= indexes_.LeastRackRoomPerFreeGpu() ||
                                 static_cast<Milliwatts>(std::min(r_.gpus, indexes_.MostRackFree())) * most_per_gpu_ <=
                                     indexes_.LeastRackRoomWithFree();
    return racks_power_all && most_per_gpu_ <= indexes_.LeastPowerDomainRoomPerFreeGpu();
  }
  // Whether no rack of the group can fall short: the least room there (its own, or above it) powers the most
  // free GPUs any of its racks holds, at the highest draw of the job's node types.
  bool NoneShort(PowerDomainId group, int most_free) const {
    const Milliwatts least_left =
        std::min(indexes_.GroupLeastRackRoom(group),
                 group == kNoId ? std::numeric_limits<Milliwatts>::max() : indexes_.ChainRooms()[group]);
    return static_cast<Milliwatts>(std::min(r_.gpus, most_free)) * most_per_gpu_ <= least_left;
  }
  // "power domain row01 would need 5.1 kW for 4 GPUs, 0.9 kW left." (empty when no rack fell short)
  std::string Describe() const {
    if (best_rack_ == kNoId) return "";
    const Topology& t = ledger_.topology();
    const double reserve = t.policy().power_reserve_fraction;
    Milliwatts left = ledger_.RackRoom(best_rack_, reserve);
    std::string where = "rack " + t.racks()[best_rack_].name;
    for (PowerDomainId p : t.racks()[best_rack_].power_chain) {
      if (ledger_.PowerDomainRoom(p, reserve) < left) {
        left = ledger_.PowerDomainRoom(p, reserve);
        where = "power domain " + t.power_domains()[p].name;
      }
    }
    std::string out = absl::StrFormat("%s would need %s for %d GPUs, %s left.", where, Kw(Need(best_rack_, best_free_)),
                                      std::min(r_.gpus, best_free_), Kw(std::max<Milliwatts>(0, left)));
    // Name measured watts when a reading counts for the rack, so that "why" is not hidden behind an estimate.
    if (std::string note = MeasuredRackNote(ledger_, best_rack_); !note.empty()) out += " Measured: " + note + ".";
    return out;
  }

 private:
  Milliwatts Need(RackId rack, int free) const {
    const Topology& t = ledger_.topology();
    return std::min(r_.gpus, free) * PerGpuFor(t, r_, t.nodes()[t.racks()[rack].nodes.front()].type);
  }

  const Ledger& ledger_;
  const PlacementIndexes& indexes_;
  const PlacementRequest& r_;
  Milliwatts most_per_gpu_ = 0;  // the job's highest draw per GPU over every node type
  int best_free_ = 0;
  RackId best_rack_ = kNoId;
};

// The power sentence for an unrestricted request: groups whose fullest rack holds fewer free GPUs than the best
// found so far (or as many, all after it) are skipped without visiting their racks.
std::string PowerShortfallByGroup(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s) {
  const Topology& t = ledger.topology();
  const PlacementIndexes& indexes = IndexesOf(ledger);
  PowerShortfall shortfall(ledger, r);
  if (shortfall.NoneShortAnywhere()) return "";
  for (PowerDomainId group = 0; group <= static_cast<PowerDomainId>(t.power_domains().size()); ++group) {
    const PowerDomainId id = group == static_cast<PowerDomainId>(t.power_domains().size()) ? kNoId : group;
    const int bound = indexes.GroupMaxRackFree(id);
    if (bound == 0 || bound < shortfall.best_free()) continue;
    if (bound == shortfall.best_free() && indexes.GroupFirstRack(id) > shortfall.best_rack()) continue;
    if (shortfall.NoneShort(id, bound)) continue;
    for (RackId rack : indexes.GroupRacks(id)) shortfall.Consider(rack, RackFreeByTally(ledger, r, s, rack));
  }
  return shortfall.Describe();
}

// Whether some type could ever give the job all its GPUs (on the cluster empty, under the described caps).
// Largest rooms first settles it for nearly every job without the exact search; else the exact maximum.
bool Resolvable(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s, bool by_node,
                long long* lifetime) {
  const Topology& t = ledger.topology();
  for (NodeTypeId type : s.types) {
    const PlacementContext ctx(ledger, r, s.locality, type, PerGpuFor(t, r, type), s.allowed);
    if (!by_node && ShareGranule(r) <= t.node_types()[type].gpus && ctx.GreedyReachesOnEmptyCluster()) return true;
  }
  for (NodeTypeId type : s.types) {
    const PlacementContext ctx(ledger, r, s.locality, type, PerGpuFor(t, r, type), s.allowed);
    *lifetime = std::max(*lifetime, ctx.FewestOnEmptyCluster().reachable);
  }
  return *lifetime >= r.gpus;
}

}  // namespace

PlacementRefusal BuildRefusal(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s,
                              const TypeMinimum* locality_blocked, bool by_node) {
  const Topology& t = ledger.topology();
  PlacementRefusal out;
  out.total_nodes = static_cast<int>(t.nodes().size());
  // A node that fails on nothing is blocked by the job as a whole: its locality, or too few GPUs in all.
  const NodeReason usable = locality_blocked ? NodeReason::kNvlinkLocality : NodeReason::kNotEnoughTogether;
  const bool visit_nodes = by_node || !s.allowed.empty();
  const ReasonTally tally = visit_nodes ? TallyByNode(ledger, r, s, usable) : TallyByGroup(ledger, r, s, usable);
  out.counts = tally.counts;
  long long lifetime = 0;
  if (!Resolvable(ledger, r, s, by_node, &lifetime)) {
    out.unresolvable = true;
    out.detail =
        absl::StrFormat("The job asks for %d GPUs; this cluster can never give it more than %d.", r.gpus, lifetime);
    return out;
  }
  if (locality_blocked) {
    out.detail =
        absl::StrFormat("NVLink locality is required: %s; no set of %d has %d free GPUs with power to run them now.",
                        DescribeTypeMinimum(t, r, *locality_blocked), locality_blocked->domains, r.gpus);
    return out;
  }
  // Power: the rack (or the power domain above it) that holds the most free GPUs it cannot power for this job.
  std::string power;
  if (visit_nodes) {
    PowerShortfall shortfall(ledger, r);
    for (RackId rack = 0; rack < static_cast<RackId>(t.racks().size()); ++rack)
      shortfall.Consider(rack, tally.rack_free[rack]);
    power = shortfall.Describe();
  } else {
    power = PowerShortfallByGroup(ledger, r, s);
  }
  if (!power.empty()) {
    out.detail = power;
    return out;
  }
  long long now = 0;
  for (NodeTypeId type : s.types)
    now = std::max(now, visit_nodes ? CapacityByNode(ledger, r, s, type) : CapacityNow(ledger, r, type));
  out.detail = absl::StrFormat("The job asks for %d GPUs; at most %d free GPUs of one node type could take it now.",
                               r.gpus, now);
  return out;
}

}  // namespace rackwise::internal
