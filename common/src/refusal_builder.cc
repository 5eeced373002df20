// Builds refusals. See refusal_builder.h.
#include "refusal_builder.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace rackwise::internal {
namespace {

std::string Kw(Milliwatts mw) { return absl::StrFormat("%.1f kW", static_cast<double>(mw) / 1e6); }

// The most GPUs this cluster could ever give the job: empty, healthy, with its node list and caps.
long long LifetimeCapacity(const Topology& t, const PlacementRequest& r, const RequestSetup& s) {
  long long total = 0;
  const double keep = 1.0 - t.policy().power_reserve_fraction;
  for (RackId rack = 0; rack < static_cast<RackId>(t.racks().size()); ++rack) {
    const Rack& info = t.racks()[rack];
    for (NodeTypeId type : s.types) {
      long long gpus = 0;
      for (NodeId n : info.nodes) {
        const Node& node = t.nodes()[n];
        if (node.type != type || (!s.allowed.empty() && !s.allowed[n]) || r.gpus_per_node > node.gpus) continue;
        gpus += r.gpus_per_node > 0 ? r.gpus_per_node : node.gpus;
      }
      const Milliwatts per_gpu = PerGpuFor(t, r, type);
      if (gpus == 0 || per_gpu <= 0) {
        total += gpus;
        continue;
      }
      Milliwatts room = static_cast<Milliwatts>(static_cast<double>(info.cap) * keep) - info.idle;
      for (PowerDomainId p : info.power_chain)
        room = std::min(room, static_cast<Milliwatts>(static_cast<double>(t.power_domains()[p].cap) * keep) -
                                  t.power_domains()[p].idle);
      total += std::min<long long>(gpus, std::max<Milliwatts>(0, room) / per_gpu);
    }
  }
  return total;
}

}  // namespace

PlacementRefusal BuildRefusal(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s,
                              bool locality_blocked) {
  const Topology& t = ledger.topology();
  PlacementRefusal out;
  out.total_nodes = static_cast<int>(t.nodes().size());
  std::vector<int> power_blocked_free(t.racks().size(), 0);
  long long usable_free = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    std::optional<NodeReason> why = NodeBlock(ledger, r, s, n);
    if (!why) {
      usable_free += ledger.free_gpu_count(n);
      why = locality_blocked ? NodeReason::kNvlinkLocality : NodeReason::kNotEnoughTogether;
    }
    if (*why == NodeReason::kRackPower || *why == NodeReason::kPowerDomainPower)
      power_blocked_free[t.nodes()[n].rack] += ledger.free_gpu_count(n);
    out.counts[static_cast<int>(*why)]++;
  }
  const long long lifetime = LifetimeCapacity(t, r, s);
  if (lifetime < r.gpus) {
    out.unresolvable = true;
    out.detail = absl::StrFormat("The job asks for %d GPUs; this cluster can never give it more than %d.", r.gpus,
                                 lifetime);
    return out;
  }
  if (locality_blocked) {
    out.detail = absl::StrFormat(
        "NVLink locality is required: no set of the fewest NVLink domains has %d free GPUs with power to run them.",
        r.gpus);
    return out;
  }
  const auto rack_it = std::max_element(power_blocked_free.begin(), power_blocked_free.end());
  if (rack_it != power_blocked_free.end() && *rack_it > 0) {
    const RackId rack = static_cast<RackId>(rack_it - power_blocked_free.begin());
    const NodeTypeId type = t.nodes()[t.racks()[rack].nodes.front()].type;
    const Milliwatts need = std::min(r.gpus, *rack_it) * PerGpuFor(t, r, type);
    const double keep = 1.0 - t.policy().power_reserve_fraction;
    Milliwatts left = static_cast<Milliwatts>(static_cast<double>(ledger.rack_cap(rack)) * keep) - ledger.rack_draw(rack);
    std::string where = "rack " + t.racks()[rack].name;
    for (PowerDomainId p : t.racks()[rack].power_chain) {
      const Milliwatts pd_left =
          static_cast<Milliwatts>(static_cast<double>(ledger.power_domain_cap(p)) * keep) - ledger.power_domain_draw(p);
      if (pd_left < left) {
        left = pd_left;
        where = "power domain " + t.power_domains()[p].name;
      }
    }
    out.detail = absl::StrFormat("%s would need %s, %s left.", where, Kw(need), Kw(std::max<Milliwatts>(0, left)));
    return out;
  }
  out.detail = absl::StrFormat("The job asks for %d GPUs; %d are free on nodes that could take a share.", r.gpus,
                               usable_free);
  return out;
}

}  // namespace rackwise::internal
