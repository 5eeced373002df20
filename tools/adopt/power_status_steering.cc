// `rackwise status` with steering: the steered draw and held jobs per rack and power domain. See power_status.h.
#include "power_status.h"
#include "rackwise/ledger_steering.h"

namespace rackwise::adopt {

void AddSteering(const Ledger& ledger, PowerStatus* status) {
  const Topology& t = ledger.topology();
  SteeringFacts facts;
  for (const OversubscribedRow& o : status->oversubscribed)
    facts.declared[o.id] = WattsToMilliwatts(o.declared_watts_per_gpu);
  LedgerSteering in;
  const SteeringPlan plan = PlanLedgerSteering(ledger, facts, &in);
  const std::vector<SteeredScope> scopes = SteeredScopes(in, plan);
  const int racks = static_cast<int>(t.racks().size());
  for (PowerRow& row : status->rows) {
    int scope = -1;
    if (row.kind == "rack") {
      if (std::optional<RackId> r = t.FindRack(row.name)) scope = *r;
    } else {
      for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p)
        if (t.power_domains()[p].name == row.name) scope = racks + p;
    }
    if (scope < 0) continue;
    row.steered_watts = MilliwattsToWatts(scopes[scope].draw);
    row.held_jobs = scopes[scope].held;
  }
}

void AddOversubscribed(const v1::ClusterState& state, PowerStatus* status) {
  for (const v1::OversubscribedAllocation& o : state.oversubscribed())
    status->oversubscribed.push_back({o.id(), o.counted_watts_per_gpu(), o.declared_watts_per_gpu()});
}

}  // namespace rackwise::adopt
