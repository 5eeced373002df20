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
  CLI::App app{"One placement decision: where a job would start now, or why it cannot.", "rackwise place"};
  SessionFlags session_flags;
  JobFlags job;
  AddSessionFlags(&app, &session_flags);
  AddJobFlags(&app, &job);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  std::optional<Session> session = LoadSession(session_flags);
  if (!session) return kExitInvalidInput;
  std::optional<PlacementRequest> request = BuildRequest(job, *session->topology);
  if (!request) return kExitUsage;
  absl::StatusOr<PlacementOutcome> outcome = Placer::Place(*session->ledger, *request);
  if (!outcome.ok()) {
    std::fprintf(stderr, "rackwise place: %s\n", std::string(outcome.status().message()).c_str());
    return kExitUsage;
  }
  if (const auto* d = std::get_if<PlacementDecision>(&*outcome)) {
    if (session_flags.json) {
      std::printf("%s\n", DecisionToJson(*session->topology, *d).dump().c_str());
    } else {
      std::printf("%s", DecisionToText(*session->topology, *session->ledger, *d).c_str());
    }
    return kExitOk;
  }
  const auto& refusal = std::get<PlacementRefusal>(*outcome);
  if (session_flags.json) {
    std::printf("%s\n", RefusalToJson(refusal).dump().c_str());
  } else {
    std::printf("%s", RefusalToText(refusal).c_str());
  }
  return refusal.unresolvable ? kExitUnresolvable : kExitRefused;
}

}  // namespace

RACKWISE_REGISTER_COMMAND(place, "place", "one placement decision for a job (or why it cannot start)", RunPlace);

}  // namespace rackwise::cli
