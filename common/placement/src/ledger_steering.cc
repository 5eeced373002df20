// See ledger_steering.h.
#include "rackwise/ledger_steering.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace rackwise {
namespace {

template <typename T>
T Or(const absl::flat_hash_map<std::string, T>& map, const std::string& id, T fallback) {
  auto it = map.find(id);
  return it == map.end() ? fallback : it->second;
}

}  // namespace

Milliwatts SteeringFloorPerGpu(const Topology& t, const NodeType& type) {
  const Milliwatts share = WattsToMilliwatts(type.gpu_watts * t.policy().steering_floor_fraction);
  return std::max(type.min_per_gpu, share);
}

LedgerSteering BuildLedgerSteering(const Ledger& l, const SteeringFacts& facts) {
  const Topology& t = l.topology();
  const double reserve = t.policy().power_reserve_fraction;
  const int racks = static_cast<int>(t.racks().size());
  LedgerSteering out;
  // Per rack: what the jobs' limits (capped by what they draw) explain, to find a reading's excess.
  std::vector<Milliwatts> explained(racks, 0);
  for (const Allocation* a : l.Allocations()) {
    SteeredAllocation s;
    s.id = a->id;
    s.declared = std::max(l.PerGpu(*a, a->nodes.front().node), Or<Milliwatts>(facts.declared, a->id, 0));
    s.floor = std::min(s.declared, SteeringFloorPerGpu(t, t.type_of(a->nodes.front().node)));
    s.current = std::clamp(Or(facts.limits, a->id, s.declared), s.floor, s.declared);
    s.demand = std::max<Milliwatts>(0, Or(facts.demand, a->id, std::numeric_limits<Milliwatts>::max() / 4));
    s.weight = Or(facts.weight, a->id, 1.0);
    s.started = Or<int64_t>(facts.started, a->id, 0);
    const Milliwatts reading_limit = std::clamp(Or(facts.reading_limits, a->id, s.current), s.floor, s.declared);
    std::vector<int64_t> gpus(racks + t.power_domains().size(), 0);
    for (const NodeGpus& ng : a->nodes) {
      const Rack& rack = t.racks()[t.nodes()[ng.node].rack];
      const int n = GpuCount(ng.gpus);
      gpus[t.nodes()[ng.node].rack] += n;
      for (PowerDomainId p : rack.power_chain) gpus[racks + p] += n;
      explained[t.nodes()[ng.node].rack] += n * std::min(reading_limit, s.demand);
    }
    for (size_t i = 0; i < gpus.size(); ++i)
      if (gpus[i] > 0) s.shares.push_back({static_cast<int>(i), gpus[i]});
    out.allocations.push_back(std::move(s));
  }
  out.scopes.resize(racks + t.power_domains().size());
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p)
    out.scopes[racks + p] = {absl::StrCat("power domain ", t.power_domains()[p].name),
                             UsableCap(l.power_domain_cap(p), reserve), 0};
  for (RackId r = 0; r < racks; ++r) {
    const Rack& rack = t.racks()[r];
    const std::optional<Milliwatts> measured = l.measured_rack_draw_now(r);
    const Milliwatts excess = measured ? std::max<Milliwatts>(0, *measured - rack.idle - explained[r]) : 0;
    const Milliwatts fixed = rack.idle + excess;
    out.scopes[r] = {absl::StrCat("rack ", rack.name), UsableCap(l.rack_cap(r), reserve), fixed};
    for (PowerDomainId p : rack.power_chain) out.scopes[racks + p].fixed += fixed;
  }
  return out;
}

std::vector<SteeredScope> SteeredScopes(const LedgerSteering& in, const SteeringPlan& plan) {
  std::vector<SteeredScope> out(in.scopes.size());
  for (size_t s = 0; s < in.scopes.size(); ++s) out[s].draw = in.scopes[s].fixed;
  std::vector<char> gone(in.allocations.size(), 0);
  for (int a : plan.requeue) gone[a] = 1;
  for (size_t a = 0; a < in.allocations.size(); ++a) {
    if (gone[a]) continue;
    const SteeredAllocation& al = in.allocations[a];
    for (const SteeringShare& sh : al.shares) {
      out[sh.scope].draw += sh.gpus * std::min(plan.limits[a], al.demand);
      if (plan.limits[a] < al.declared) out[sh.scope].held++;
    }
  }
  return out;
}

SteeringPlan PlanLedgerSteering(const Ledger& l, const SteeringFacts& facts, LedgerSteering* input) {
  LedgerSteering local;
  LedgerSteering& in = input ? *input : local;
  in = BuildLedgerSteering(l, facts);
  const PlacementPolicy& policy = l.topology().policy();
  return PlanSteering(
      in.scopes, in.allocations,
      {.hysteresis_fraction = policy.steering_hysteresis_fraction, .weighted = policy.steering_priority_weighted});
}

}  // namespace rackwise
