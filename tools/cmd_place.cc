// `rackwise place`: one placement decision for a job on a cluster description plus current state.
// Exit 0 with the decision; kExitRefused when it cannot start now; kExitUnresolvable when it never can.
#include <cstdio>

#include "command.h"
#include "decision_format.h"
#include "placement_session.h"
#include "rackwise/placer.h"
#include "telemetry_session.h"

namespace rackwise::cli {
namespace {

int RunPlace(int argc, char** argv) {
  auto parsed = ParseAndPlace(argc, argv, "place", "One placement decision: where a job would start now, or why not.");
  if (const int* code = std::get_if<int>(&parsed)) return *code;
  const PlacementRun& run = std::get<PlacementRun>(parsed);
  const Session& session = run.session;
  if (const auto* d = std::get_if<PlacementDecision>(&run.outcome)) {
    if (run.flags.json) {
      nlohmann::json json = DecisionToJson(*session.topology, *d);
      AddTelemetryJson(*session.ledger, run.measured, &json);
      std::printf("%s\n", json.dump().c_str());
    } else {
      std::printf("%s%s", DecisionToText(*session.topology, *session.ledger, *d).c_str(),
                  TelemetryText(run.measured, static_cast<int>(session.topology->racks().size())).c_str());
    }
    return kExitOk;
  }
  const auto& refusal = std::get<PlacementRefusal>(run.outcome);
  if (run.flags.json) {
    nlohmann::json json = RefusalToJson(refusal);
    AddTelemetryJson(*session.ledger, run.measured, &json);
    std::printf("%s\n", json.dump().c_str());
  } else {
    std::printf("%s%s", RefusalToText(refusal).c_str(),
                TelemetryText(run.measured, static_cast<int>(session.topology->racks().size())).c_str());
  }
  return refusal.unresolvable ? kExitUnresolvable : kExitRefused;
}

}  // namespace

RACKWISE_REGISTER_COMMAND(place, "place", "one placement decision for a job (or why it cannot start)", RunPlace);

}  // namespace rackwise::cli
