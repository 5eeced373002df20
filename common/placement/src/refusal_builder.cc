// Builds refusals. See refusal_builder.h.
#include "refusal_builder.h"

#include "placement_context.h"
#include "rackwise/power_rollup.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_format.h"
#include "rackwise/telemetry.h"

namespace rackwise::internal {
namespace {

std::string Kw(Milliwatts mw) { return absl::StrFormat("%.1f kW", static_cast<double>(mw) / 1e6); }

// Watts left under every rack's and power domain's cap (see PowerLimitedGpus for how they limit a job).
struct PowerView {
  std::vector<Milliwatts> rack_room, pd_room;
};

// Room under every cap less the reserve, now.
PowerView Rooms(const Ledger& l) {
  const Topology& t = l.topology();
  const double reserve = t.policy().power_reserve_fraction;
  PowerView v;
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) v.rack_room.push_back(l.RackRoom(r, reserve));
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p)
    v.pd_room.push_back(l.PowerDomainRoom(p, reserve));
  return v;
}

// Per rack, what the nodes of one type give the job ignoring power, from the ledger's tallies (no node visited).
// Unrestricted requests only: the tallies know nothing of a node list.
void RackGpusByTally(const Ledger& l, const PlacementRequest& r, NodeTypeId type, std::vector<long long>* rack_gpus) {
  const Topology& t = l.topology();
  const int least = ShareGranule(r);
  if (least > t.node_types()[type].gpus) return;
  for (RackId rack = 0; rack < static_cast<RackId>(t.racks().size()); ++rack) {
    for (const Ledger::RackTypeTally& tally : l.rack_tallies(rack)) {
      if (tally.type != type) continue;
      if (least == 1 && r.gpus_per_node == 0) {
        (*rack_gpus)[rack] += tally.up_free_gpus;
        continue;
      }
      for (int f = least; f < static_cast<int>(tally.up_by_free.size()); ++f)
        (*rack_gpus)[rack] += tally.up_by_free[f] * NodeShareOf(r, f);
    }
  }
}

// The most GPUs the job could get of one node type now (healthy nodes, free GPUs, power left).
long long Capacity(const Ledger& l, const PlacementRequest& r, const RequestSetup& s, NodeTypeId type,
                   const PowerView& power, bool by_node) {
  const Topology& t = l.topology();
  std::vector<long long> rack_gpus(t.racks().size(), 0);
  if (by_node || !s.allowed.empty()) {
    for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
      const Node& node = t.nodes()[n];
      if (node.type != type || (!s.allowed.empty() && !s.allowed[n]) || ShareGranule(r) > node.gpus) continue;
      if (l.node_health(n) != NodeHealth::kUp) continue;
      rack_gpus[node.rack] += NodeShareOf(r, l.free_gpu_count(n));
    }
  } else {
    RackGpusByTally(l, r, type, &rack_gpus);
  }
  std::vector<long long> below;
  return PowerLimitedGpus(
      t, PerGpuFor(t, r, type), [&](RackId k) { return rack_gpus[k]; }, [&](RackId k) { return power.rack_room[k]; },
      [&](PowerDomainId p) { return power.pd_room[p]; }, &below);
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

// The same counts from the ledger's per-rack tallies, in NodeBlock's order of reasons; unrestricted requests.
ReasonTally TallyByRack(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s, NodeReason usable) {
  const Topology& t = ledger.topology();
  ReasonTally out;
  out.rack_free.assign(t.racks().size(), 0);
  auto count = [&out](NodeReason why, int nodes) { out.counts[static_cast<int>(why)] += nodes; };
  const int least = ShareGranule(r);
  for (RackId rack = 0; rack < static_cast<RackId>(t.racks().size()); ++rack) {
    const RackPowerRoom room = PowerRoomOf(ledger, rack);
    for (const Ledger::RackTypeTally& tally : ledger.rack_tallies(rack)) {
      if (std::find(s.types.begin(), s.types.end(), tally.type) == s.types.end()) {
        count(NodeReason::kWrongNodeType, tally.nodes);
        continue;
      }
      if (least > t.node_types()[tally.type].gpus) {
        count(NodeReason::kTooFewGpusOnNode, tally.nodes);
        continue;
      }
      count(NodeReason::kNodeDown, tally.down);
      count(NodeReason::kNodeDrained, tally.drained);
      int fitting = 0;
      long long free = tally.up_free_gpus;
      for (int f = 0; f < least; ++f) {
        count(NodeReason::kInsufficientGpus, tally.up_by_free[f]);
        free -= static_cast<long long>(f) * tally.up_by_free[f];
      }
      for (int f = least; f < static_cast<int>(tally.up_by_free.size()); ++f) fitting += tally.up_by_free[f];
      const Milliwatts need = least * PerGpuFor(t, r, tally.type);
      const NodeReason why = room.rack < need    ? NodeReason::kRackPower
                             : room.chain < need ? NodeReason::kPowerDomainPower
                                                 : usable;
      count(why, fitting);
      out.rack_free[rack] += static_cast<int>(free);
    }
  }
  return out;
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
  const ReasonTally tally =
      by_node || !s.allowed.empty() ? TallyByNode(ledger, r, s, usable) : TallyByRack(ledger, r, s, usable);
  out.counts = tally.counts;
  const std::vector<int>& rack_free = tally.rack_free;
  long long lifetime = 0;
  if (!Resolvable(ledger, r, s, by_node, &lifetime)) {
    out.unresolvable = true;
    out.detail =
        absl::StrFormat("The job asks for %d GPUs; this cluster can never give it more than %d.", r.gpus, lifetime);
    return out;
  }
  const PowerView now_rooms = Rooms(ledger);
  if (locality_blocked) {
    out.detail =
        absl::StrFormat("NVLink locality is required: %s; no set of %d has %d free GPUs with power to run them now.",
                        DescribeTypeMinimum(t, r, *locality_blocked), locality_blocked->domains, r.gpus);
    return out;
  }
  // Power: the rack (or the power domain above it) that holds the most free GPUs it cannot power for this job.
  int best_free = 0;
  std::string best_detail;
  for (RackId rack = 0; rack < static_cast<RackId>(t.racks().size()); ++rack) {
    if (rack_free[rack] <= best_free) continue;
    const int gpus = std::min(r.gpus, rack_free[rack]);
    const Milliwatts need = gpus * PerGpuFor(t, r, t.nodes()[t.racks()[rack].nodes.front()].type);
    Milliwatts left = now_rooms.rack_room[rack];
    std::string where = "rack " + t.racks()[rack].name;
    for (PowerDomainId p : t.racks()[rack].power_chain) {
      if (now_rooms.pd_room[p] < left) {
        left = now_rooms.pd_room[p];
        where = "power domain " + t.power_domains()[p].name;
      }
    }
    if (need <= left) continue;
    best_free = rack_free[rack];
    best_detail = absl::StrFormat("%s would need %s for %d GPUs, %s left.", where, Kw(need), gpus,
                                  Kw(std::max<Milliwatts>(0, left)));
    // Name measured watts when a reading counts for the rack, so that "why" is not hidden behind an estimate.
    if (std::string note = MeasuredRackNote(ledger, rack); !note.empty()) best_detail += " Measured: " + note + ".";
  }
  if (!best_detail.empty()) {
    out.detail = best_detail;
    return out;
  }
  long long now = 0;
  for (NodeTypeId type : s.types) now = std::max(now, Capacity(ledger, r, s, type, now_rooms, by_node));
  out.detail = absl::StrFormat("The job asks for %d GPUs; at most %d free GPUs of one node type could take it now.",
                               r.gpus, now);
  return out;
}

}  // namespace rackwise::internal
