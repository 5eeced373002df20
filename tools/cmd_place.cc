// `rackwise place`: one placement decision for a job on a cluster description plus current state.
// Exit 0 with the decision; kExitRefused when it cannot start now; kExitUnresolvable when it never can.
#include <cstdio>

#include "command.h"
#include "decision_format.h"
#include "placement_session.h"
#include "rackwise/placer.h"

namespace rackwise::cli {
namespace {

int RunPlace(int argc, char** argv) {
  auto parsed = ParseAndPlace(argc, argv, "place", "One placement decision: where a job would start now, or why not.");
  if (const int* code = std::get_if<int>(&parsed)) return *code;
  const PlacementRun& run = std::get<PlacementRun>(parsed);
  const Session& session = run.session;
  if (const auto* d = std::get_if<PlacementDecision>(&run.outcome)) {
    if (run.flags.json) {
      std::printf("%s\n", DecisionToJson(*session.topology, *d).dump().c_str());
    } else {
      std::printf("%s", DecisionToText(*session.topology, *session.ledger, *d).c_str());
    }
    return kExitOk;
  }
  const auto& refusal = std::get<PlacementRefusal>(run.outcome);
  if (run.flags.json) {
    std::printf("%s\n", RefusalToJson(refusal).dump().c_str());
  } else {
    std::printf("%s", RefusalToText(refusal).c_str());
  }
  return refusal.unresolvable ? kExitUnresolvable : kExitRefused;
}

}  // namespace

RACKWISE_REGISTER_COMMAND(place, "place", "one placement decision for a job (or why it cannot start)", RunPlace);

}  // namespace rackwise::cli
