// `rackwise explain`: where a job would go and why, or why it cannot start, in words an operator uses:
// the decision (or the kube-scheduler-style count of nodes per reason), then every rack with its free GPUs,
// its largest free NVLink domain, its power and what blocks this job there.
#include <algorithm>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "command.h"
#include "decision_format.h"
#include "placement_session.h"
#include "rackwise/locality.h"
#include "rackwise/placer.h"
#include "steering_explain.h"
#include "telemetry_session.h"

namespace rackwise::cli {
namespace {

nlohmann::json RackTable(const Ledger& l, const PlacementRequest& r, std::string* text) {
  const Topology& t = l.topology();
  nlohmann::json racks = nlohmann::json::array();
  absl::StrAppendFormat(text, "\n  %-14s %-12s %6s %10s %9s %9s %9s %9s  %s\n", "RACK", "TYPE", "FREE", "BEST DOM",
                        "EST kW", "MEAS kW", "CAP kW", "LEFT kW", "FOR THIS JOB");
  for (RackId rack = 0; rack < static_cast<RackId>(t.racks().size()); ++rack) {
    const Rack& info = t.racks()[rack];
    int free = 0, best_domain = 0;
    for (NodeId n : info.nodes) free += l.free_gpu_count(n);
    for (DomainId d : info.domains) best_domain = std::max(best_domain, l.domain_free_gpus(d));
    std::array<int, static_cast<int>(NodeReason::kCount)> why{};
    int open = 0;
    for (NodeId n : info.nodes) {
      if (std::optional<NodeReason> reason = Placer::FilterNode(l, r, n)) {
        why[static_cast<int>(*reason)]++;
      } else {
        ++open;
      }
    }
    std::string verdict = absl::StrFormat("%d node(s) could take a share", open);
    if (open == 0) {
      const int top = static_cast<int>(std::max_element(why.begin(), why.end()) - why.begin());
      verdict = NodeReasonText(static_cast<NodeReason>(top));
    }
    const std::string type = t.node_types()[t.nodes()[info.nodes.front()].type].name;
    const double draw = static_cast<double>(l.rack_draw(rack)) / 1e6, cap = static_cast<double>(l.rack_cap(rack)) / 1e6;
    const double left = static_cast<double>(l.RackHeadroom(rack, t.policy().power_reserve_fraction)) / 1e6;
    // Estimated and measured draw side by side; "-" where no fresh reading counts (the estimate does).
    const std::optional<Milliwatts> measured = l.measured_rack_draw_now(rack);
    const std::string meas = measured ? absl::StrFormat("%.1f", static_cast<double>(*measured) / 1e6) : "-";
    absl::StrAppendFormat(text, "  %-14s %-12s %6d %10d %9.1f %9s %9.1f %9.1f  %s\n", info.name, type, free,
                          best_domain, draw, meas, cap, left, verdict);
    racks.push_back({{"rack", info.name},
                     {"type", type},
                     {"free_gpus", free},
                     {"largest_free_domain", best_domain},
                     {"draw_kw", draw},
                     {"cap_kw", cap},
                     {"headroom_kw", left},
                     {"verdict", verdict}});
    racks.back()["measured_kw"] = measured ? nlohmann::json(static_cast<double>(*measured) / 1e6) : nlohmann::json();
  }
  return racks;
}

int RunExplain(int argc, char** argv) {
  auto parsed = ParseAndPlace(argc, argv, "explain", "Where a job would go, or why it cannot start, rack by rack.");
  if (const int* code = std::get_if<int>(&parsed)) return *code;
  const PlacementRun& run = std::get<PlacementRun>(parsed);
  const Session* session = &run.session;
  const PlacementRequest* request = &run.request;
  const PlacementOutcome* outcome = &run.outcome;
  const Topology& t = *session->topology;
  const Locality locality = request->locality.value_or(t.policy().default_locality);
  std::string text = absl::StrFormat(
      "job %s: %d GPUs, %s per node, NVLink locality %s%s\n", request->id, request->gpus,
      request->gpus_per_node > 0 ? std::to_string(request->gpus_per_node) : "any split", LocalityName(locality),
      request->watts_per_gpu > 0 ? absl::StrFormat(", %.0f W per GPU declared", request->watts_per_gpu)
                                 : ", node types' default watts per GPU");
  nlohmann::json json = {{"job", request->id}, {"gpus", request->gpus}, {"locality", LocalityName(locality)}};
  int code = kExitOk;
  if (const auto* d = std::get_if<PlacementDecision>(&*outcome)) {
    text += "\n" + DecisionToText(t, *session->ledger, *d);
    json["decision"] = DecisionToJson(t, *d);
    if (session->description.telemetry().on_overdraw() == v1::OVERDRAW_ACTION_LOWER_LIMITS)
      text += SteeringNote(*session->ledger, *d, request->id, &json["steering"]);
  } else {
    const auto& refusal = std::get<PlacementRefusal>(*outcome);
    text += "\n" + RefusalToText(refusal);
    json["refusal"] = RefusalToJson(refusal);
    code = refusal.unresolvable ? kExitUnresolvable : kExitRefused;
  }
  if (run.oversubscribed.applied) {
    text += absl::StrFormat("counted oversubscribed: %.1f W per GPU (declared %.1f W, the GPUs' limit)\n",
                            run.oversubscribed.counted_watts_per_gpu, run.oversubscribed.declared_watts_per_gpu);
    json["oversubscribed"] = {{"counted_watts_per_gpu", run.oversubscribed.counted_watts_per_gpu},
                              {"declared_watts_per_gpu", run.oversubscribed.declared_watts_per_gpu}};
  } else if (!run.oversubscribed.why_not.empty()) {
    text += "oversubscription: " + run.oversubscribed.why_not + "\n";
    json["oversubscription_off"] = run.oversubscribed.why_not;
  }
  json["racks"] = RackTable(*session->ledger, *request, &text);
  AddTelemetryJson(*session->ledger, run.measured, &json);
  text += TelemetryText(run.measured, static_cast<int>(t.racks().size()));
  if (run.flags.json) {
    std::printf("%s\n", json.dump(2).c_str());
  } else {
    std::printf("%s", text.c_str());
  }
  return code;
}

}  // namespace

RACKWISE_REGISTER_COMMAND(explain, "explain", "where a job would go, or why it cannot start, rack by rack", RunExplain);

}  // namespace rackwise::cli
