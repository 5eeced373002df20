// See steering_explain.h.
#include "steering_explain.h"

#include "absl/strings/str_format.h"
#include "rackwise/ledger_steering.h"

namespace rackwise::cli {

std::string SteeringNote(const Ledger& ledger, const PlacementDecision& decision, const std::string& id,
                         nlohmann::json* json) {
  Ledger with = ledger;
  if (!with.Commit(decision.ToAllocation(id), CommitMode::kRecover).ok()) return "";
  LedgerSteering in;
  const SteeringPlan plan = PlanLedgerSteering(with, {}, &in);
  for (size_t a = 0; a < in.allocations.size(); ++a) {
    if (in.allocations[a].id != id) continue;
    const double declared = MilliwattsToWatts(in.allocations[a].declared);
    const double limit = MilliwattsToWatts(plan.limits[a]);
    (*json)["declared_watts_per_gpu"] = declared;
    (*json)["steered_watts_per_gpu"] = limit;
    (*json)["steered"] = limit < declared;
    if (limit < declared)
      return absl::StrFormat(
          "\nsteering: job %s would run steered, at %.0f W per GPU of its %.0f W declared: the caps of its racks and "
          "power domains cannot hold every job there at its declared watts (%d jobs held below them)\n",
          id, limit, declared, plan.held_below_declared);
    return absl::StrFormat("\nsteering: job %s would run at its declared %.0f W per GPU\n", id, declared);
  }
  return "";
}

}  // namespace rackwise::cli
