// `rackwise validate FILE [--state STATE] [--json]`: checks a cluster description (and optionally a state file
// against it). Exit 0 with a one-line summary, or exit 1 with every problem as `FILE:LINE: message` on stderr,
// so editors and CI logs can jump to the line.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_set.h"
#include "command.h"
#include "rackwise/cluster_description.h"
#include "rackwise/topology.h"

namespace rackwise::cli {
namespace {

nlohmann::ordered_json ProblemsJson(const Diagnostics& diagnostics) {
  nlohmann::ordered_json problems = nlohmann::ordered_json::array();
  for (const Diagnostic& d : diagnostics) {
    problems.push_back({{"file", d.file}, {"line", d.line}, {"message", d.message}});
  }
  return problems;
}

int AllocatedGpus(const v1::ClusterState& state) {
  int gpus = 0;
  for (const v1::Allocation& a : state.allocations()) {
    for (const v1::NodeGpus& n : a.nodes()) gpus += n.gpus_size();
  }
  return gpus;
}

// The scalable units the description names (the topology gives each rack without one an SU of its own).
int DeclaredScalableUnits(const v1::ClusterDescription& d) {
  absl::flat_hash_set<std::string> units;
  for (const v1::Rack& rack : d.racks()) {
    if (!rack.scalable_unit().empty()) units.insert(rack.scalable_unit());
  }
  return static_cast<int>(units.size());
}

int Fail(const std::string& file, const Diagnostics& diagnostics, const absl::Status& status, bool json) {
  for (const Diagnostic& d : diagnostics) std::fprintf(stderr, "%s\n", d.ToString().c_str());
  if (diagnostics.empty()) std::fprintf(stderr, "%s: %s\n", file.c_str(), std::string(status.message()).c_str());
  if (json) {
    nlohmann::ordered_json out = {{"file", file}, {"valid", false}, {"problems", ProblemsJson(diagnostics)}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return kExitInvalidInput;
}

int RunValidate(int argc, char** argv) {
  CLI::App app{"Check a cluster description (and a state file): every problem as FILE:LINE: message", "validate"};
  std::string file, state_file;
  bool json = false;
  app.add_option("FILE", file, "cluster description (YAML)")->required();
  app.add_option("--state", state_file, "also check a state file (allocations, health, caps) against FILE");
  app.add_flag("--json", json, "print the summary (or the problems) as JSON on stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> description = LoadClusterDescription(file, &diagnostics);
  if (!description.ok()) return Fail(file, diagnostics, description.status(), json);

  absl::StatusOr<v1::ClusterState> state;
  if (!state_file.empty()) {
    state = LoadClusterState(state_file, *description, &diagnostics);
    if (!state.ok()) return Fail(state_file, diagnostics, state.status(), json);
  }

  // What the description holds, as the placer sees it (a valid description builds).
  absl::StatusOr<Topology> topology = Topology::Build(*description);
  if (!topology.ok()) return Fail(file, diagnostics, topology.status(), json);
  const auto count = [](const auto& items) { return static_cast<int>(items.size()); };
  const Topology& t = *topology;
  if (json) {
    nlohmann::ordered_json out = {{"file", file},
                                  {"valid", true},
                                  {"cluster", description->cluster()},
                                  {"nodes", count(t.nodes())},
                                  {"gpus", t.total_gpus()},
                                  {"racks", count(t.racks())},
                                  {"nvlink_domains", count(t.domains())},
                                  {"power_domains", count(t.power_domains())},
                                  {"scalable_units", DeclaredScalableUnits(*description)}};
    if (!state_file.empty()) {
      out["state"] = {{"file", state_file},
                      {"allocations", state->allocations_size()},
                      {"allocated_gpus", AllocatedGpus(*state)},
                      {"node_statuses", state->nodes_size()},
                      {"cap_overrides", state->caps_size()}};
    }
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return kExitOk;
  }
  std::printf(
      "%s: valid: cluster '%s': %d nodes, %d GPUs, %d racks, %d NVLink domains, %d power domains, "
      "%d scalable units\n",
      file.c_str(), description->cluster().c_str(), count(t.nodes()), t.total_gpus(), count(t.racks()),
      count(t.domains()), count(t.power_domains()), DeclaredScalableUnits(*description));
  if (!state_file.empty()) {
    std::printf("%s: valid: %d allocations (%d GPUs), %d node statuses, %d cap overrides\n", state_file.c_str(),
                state->allocations_size(), AllocatedGpus(*state), state->nodes_size(), state->caps_size());
  }
  return kExitOk;
}

}  // namespace

RACKWISE_REGISTER_COMMAND(validate, "validate", "check a cluster description (and a state file); FILE:LINE: problems",
                          RunValidate);

}  // namespace rackwise::cli
