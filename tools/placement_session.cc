// See placement_session.h.
#include "placement_session.h"

#include <cstdio>

#include "command.h"
#include "rackwise/cluster_description.h"
#include "rackwise/cluster_state.h"
#include "rackwise/hostlist.h"
#include "rackwise/locality.h"
#include "rackwise/named_request.h"
#include "rackwise/placer.h"
#include "telemetry_session.h"

namespace rackwise::cli {

void AddJobFlags(CLI::App* app, JobFlags* job) {
  app->add_option("--gpus", job->gpus, "GPUs in total")->required()->check(CLI::Range(1, 1 << 20));
  app->add_option("--gpus-per-node", job->gpus_per_node, "GPUs on every node (0: any split)")->check(CLI::Range(0, 64));
  app->add_option("--locality", job->locality, "NVLink locality: required, preferred or none")
      ->check(CLI::IsMember({"required", "preferred", "none"}));
  app->add_option("--watts-per-gpu", job->watts_per_gpu, "declared draw per GPU (0: the node type's)")
      ->check(CLI::Range(0.0, 100000.0));
  app->add_option("--node-type", job->node_type, "only nodes of this type");
  app->add_option("--nodes", job->nodes, "only these nodes (hostlist)");
  app->add_option("--exclude", job->exclude, "never these nodes (hostlist)");
  app->add_option("--id", job->id, "job id used in messages");
  app->add_option("--waited", job->waited_s,
                  "seconds the job has waited, for the policy's preferred_wait_s (a `preferred` job with no time limit "
                  "waits for its fewest NVLink domains only while this is below it)")
      ->check(CLI::Range(0.0, 1e12));
}

void AddSessionFlags(CLI::App* app, SessionFlags* session) {
  app->add_option("--cluster", session->cluster, "cluster description (default: the built-in example)");
  app->add_option("--state", session->state, "current allocations, health and cap changes (YAML)");
  app->add_flag("--json", session->json, "machine-readable output");
  app->add_flag("--no-telemetry", session->no_telemetry,
                "do not query the description's telemetry (count estimated draw only)");
}

namespace {

void PrintDiagnostics(const Diagnostics& diagnostics) {
  for (const Diagnostic& d : diagnostics) std::fprintf(stderr, "%s\n", d.ToString().c_str());
}

}  // namespace

std::optional<Session> LoadSession(const SessionFlags& flags) {
  Session s;
  const std::string path = flags.cluster.empty() ? DefaultClusterPath() : flags.cluster;
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> description = LoadClusterDescription(path, &diagnostics);
  if (!description.ok()) {
    PrintDiagnostics(diagnostics);
    if (diagnostics.empty()) std::fprintf(stderr, "%s: %s\n", path.c_str(), description.status().ToString().c_str());
    return std::nullopt;
  }
  s.description = *std::move(description);
  absl::StatusOr<Topology> topology = Topology::Build(s.description);
  if (!topology.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), std::string(topology.status().message()).c_str());
    return std::nullopt;
  }
  s.topology = std::make_unique<Topology>(*std::move(topology));
  s.ledger = std::make_unique<Ledger>(*s.topology);
  if (!flags.state.empty()) {
    diagnostics.clear();
    absl::StatusOr<v1::ClusterState> state = LoadClusterState(flags.state, s.description, &diagnostics);
    if (!state.ok()) {
      PrintDiagnostics(diagnostics);
      if (diagnostics.empty())
        std::fprintf(stderr, "%s: %s\n", flags.state.c_str(), std::string(state.status().message()).c_str());
      return std::nullopt;
    }
    s.state = *state;
    if (absl::Status applied = ApplyClusterState(*state, s.ledger.get()); !applied.ok()) {
      std::fprintf(stderr, "%s: %s\n", flags.state.c_str(), std::string(applied.message()).c_str());
      return std::nullopt;
    }
  }
  return s;
}

namespace {

// The CLI's flag for a field of NamedRequest, so that errors name what the user typed.
std::string FlagOf(std::string_view message) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {{"allowed_nodes:", "--nodes:"},
                                                                             {"excluded_nodes:", "--exclude:"},
                                                                             {"node_type:", "--node-type:"},
                                                                             {"gpus_per_node:", "--gpus-per-node:"},
                                                                             {"gpus:", "--gpus:"}};
  for (const auto& [field, flag] : kFlags) {
    if (message.substr(0, field.size()) == field) return std::string(flag) + std::string(message.substr(field.size()));
  }
  return std::string(message);
}

}  // namespace

std::optional<PlacementRequest> BuildRequest(const JobFlags& job, const Topology& t) {
  // An empty hostlist flag means no restriction, not a list holding "".
  auto hostlists = [](const std::string& flag) {
    return flag.empty() ? std::vector<std::string>{} : std::vector<std::string>{flag};
  };
  const NamedRequest named{.id = job.id,
                           .gpus = job.gpus,
                           .gpus_per_node = job.gpus_per_node,
                           .locality = ParseLocality(job.locality),  // empty: unset; CLI11 checked the rest
                           .watts_per_gpu = job.watts_per_gpu,
                           .allowed_nodes = hostlists(job.nodes),
                           .excluded_nodes = hostlists(job.exclude),
                           .node_type = job.node_type,
                           .waited_seconds = job.waited_s};
  absl::StatusOr<PlacementRequest> r = ResolveRequest(t, named);
  if (!r.ok()) {
    std::fprintf(stderr, "rackwise: %s\n", FlagOf(std::string(r.status().message())).c_str());
    return std::nullopt;
  }
  return *std::move(r);
}

std::variant<PlacementRun, int> ParseAndPlace(int argc, char** argv, const std::string& command,
                                              const std::string& summary) {
  CLI::App app{summary, "rackwise " + command};
  PlacementRun run;
  JobFlags job;
  AddSessionFlags(&app, &run.flags);
  AddJobFlags(&app, &job);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  std::optional<Session> session = LoadSession(run.flags);
  if (!session) return kExitInvalidInput;
  run.session = *std::move(session);
  std::optional<PlacementRequest> request = BuildRequest(job, *run.session.topology);
  if (!request) return kExitUsage;
  run.request = *std::move(request);
  run.measured = MeasureOnce(run.session.description, run.flags.no_telemetry, run.session.ledger.get());
  run.oversubscribed =
      CountOversubscribed(*run.session.topology, run.request,
                          TelemetrySettings::FromDescription(run.session.description), run.measured.state);
  absl::StatusOr<PlacementOutcome> outcome =
      Placer::Place(*run.session.ledger, WithOversubscription(run.request, run.oversubscribed));
  if (!outcome.ok()) {
    std::fprintf(stderr, "rackwise %s: %s\n", command.c_str(), std::string(outcome.status().message()).c_str());
    return kExitUsage;
  }
  run.outcome = *std::move(outcome);
  return run;
}

}  // namespace rackwise::cli
