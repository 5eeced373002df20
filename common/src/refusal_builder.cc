// Builds refusals. See refusal_builder.h.
#include "refusal_builder.h"

#include "placement_context.h"
#include "power_rollup.h"

#include <algorithm>

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

// The most GPUs the job could get of one node type now (healthy nodes, free GPUs, power left).
long long Capacity(const Ledger& l, const PlacementRequest& r, const RequestSetup& s, NodeTypeId type,
                   const PowerView& power) {
  const Topology& t = l.topology();
  std::vector<long long> rack_gpus(t.racks().size(), 0);
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    const Node& node = t.nodes()[n];
    if (node.type != type || (!s.allowed.empty() && !s.allowed[n]) || r.gpus_per_node > node.gpus) continue;
    if (l.node_health(n) != NodeHealth::kUp) continue;
    const int free = l.free_gpu_count(n);
    rack_gpus[node.rack] += r.gpus_per_node > 0 ? (free >= r.gpus_per_node ? r.gpus_per_node : 0) : free;
  }
  std::vector<long long> below;
  return PowerLimitedGpus(
      t, PerGpuFor(t, r, type), [&](RackId k) { return rack_gpus[k]; }, [&](RackId k) { return power.rack_room[k]; },
      [&](PowerDomainId p) { return power.pd_room[p]; }, &below);
}

}  // namespace

PlacementRefusal BuildRefusal(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s,
                              const TypeMinimum* locality_blocked) {
  const Topology& t = ledger.topology();
  PlacementRefusal out;
  out.total_nodes = static_cast<int>(t.nodes().size());
  std::vector<int> rack_free(t.racks().size(), 0);  // free GPUs on nodes that fail on nothing but power
  long long usable_free = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    std::optional<NodeReason> why = NodeBlock(ledger, r, s, n);
    if (!why) {
      usable_free += ledger.free_gpu_count(n);
      rack_free[t.nodes()[n].rack] += ledger.free_gpu_count(n);
      why = locality_blocked ? NodeReason::kNvlinkLocality : NodeReason::kNotEnoughTogether;
    } else if (*why == NodeReason::kRackPower || *why == NodeReason::kPowerDomainPower) {
      rack_free[t.nodes()[n].rack] += ledger.free_gpu_count(n);
    }
    out.counts[static_cast<int>(*why)]++;
  }
  long long lifetime = 0, now = 0;
  const PowerView now_rooms = Rooms(ledger);
  for (NodeTypeId type : s.types) {  // a job never mixes node types: the best single type counts
    // On the empty cluster, shares rounded to whole gpus_per_node under every cap (what a plan could take).
    const PlacementContext ctx(ledger, r, s.locality, type, PerGpuFor(t, r, type), s.allowed);
    lifetime = std::max(lifetime, ctx.FewestOnEmptyCluster().reachable);
    now = std::max(now, Capacity(ledger, r, s, type, now_rooms));
  }
  if (lifetime < r.gpus) {
    out.unresolvable = true;
    out.detail = absl::StrFormat("The job asks for %d GPUs; this cluster can never give it more than %d.", r.gpus,
                                 lifetime);
    return out;
  }
  if (locality_blocked) {
    out.detail = absl::StrFormat(
        "NVLink locality is required: %s; no set of %d has %d free GPUs with power to run them now.",
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
  out.detail = absl::StrFormat("The job asks for %d GPUs; at most %d free GPUs of one node type could take it now.",
                               r.gpus, now);
  return out;
}

}  // namespace rackwise::internal
