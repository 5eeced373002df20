// SPDX-License-Identifier: GPL-2.0-or-later
// rackwise-slurm-gpu-power prolog|epilog: the GPU power work of spank_rackwise.so's job prolog and epilog, in a
// process of its own (the plugin runs it with the job script's environment; see spank_rackwise.cc for why).
// prolog: holds the job's GPUs on this node to the watts per GPU the select plugin counted; epilog: gives the
// previous limits back. Prints one line (what was done, or why the job must not run here) and exits
//   0  the job may run here (or the limits were restored),
//   1  the job must not run on this node (the plugin drains it with the printed reason),
//   2  bad usage.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "job_power.h"
#include "node_power/job_power_enforcer.h"
#include "node_power/nvml_library.h"
#include "rackwise/cluster_description.h"

namespace rackwise::slurm {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

JobScriptEnvironment EnvironmentNow() {
  return {Env("SLURM_JOB_ID"), Env("SLURMD_NODENAME"), Env("SLURM_JOB_GPUS"), Env(kPrologGpuWattsEnv),
          Env("SLURM_CONF")};
}

struct JobScriptContext {
  EnforcementSettings settings;
  std::unique_ptr<Topology> topology;
};

// Loads rackwise.yaml beside slurm.conf. On error the status says what is wrong with the file.
absl::StatusOr<JobScriptContext> LoadContext(const JobScriptEnvironment& env) {
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> description =
      LoadClusterDescription(DescriptionPathBeside(env.slurm_conf), &diagnostics);
  if (!description.ok()) return description.status();
  absl::StatusOr<Topology> topology = Topology::Build(*description);
  if (!topology.ok()) return topology.status();
  return JobScriptContext{SettingsFor(description->power_enforcement(), env.node),
                          std::make_unique<Topology>(*std::move(topology))};
}

node_power::JobPowerEnforcer EnforcerFor(const EnforcementSettings& settings) {
  const std::string library = settings.nvml_library;
  return node_power::JobPowerEnforcer([library] { return node_power::OpenNvml(library); }, settings.state_file);
}

int Say(int status, const std::string& line) {
  std::printf("%s\n", line.c_str());
  return status;
}

int Prolog(const JobScriptEnvironment& env) {
  absl::StatusOr<JobScriptContext> context = LoadContext(env);
  if (!context.ok()) {
    // Without the description the counted watts are unknown: only a job that declared its own must not run.
    const std::string why(context.status().message());
    if (env.gpu_watts.empty() || env.job_gpus.empty()) return Say(0, "no GPU power limit: " + why);
    return Say(1, "cannot enforce --gpu-watts=" + env.gpu_watts + ": " + why);
  }
  if (!context->settings.enabled) return Say(0, "");
  absl::StatusOr<std::optional<node_power::JobGpuPower>> job = JobGpuPowerOn(*context->topology, env);
  if (!job.ok()) return Say(1, std::string(job.status().message()));
  if (!*job) return Say(0, "");
  absl::StatusOr<std::string> started = EnforcerFor(context->settings).Start(**job);
  if (!started.ok()) return Say(1, std::string(started.status().message()));
  return Say(0, *started);
}

int Epilog(const JobScriptEnvironment& env) {
  absl::StatusOr<JobScriptContext> context = LoadContext(env);
  if (!context.ok()) {
    // Limits left in place only hold GPUs lower than counted, and the next job's prolog refuses those GPUs.
    return Say(0, "cannot restore GPU power limits: " + std::string(context.status().message()));
  }
  absl::StatusOr<std::string> finished = EnforcerFor(context->settings).Finish(LeaseOwner(env.job_id));
  if (!finished.ok()) return Say(1, std::string(finished.status().message()));
  return Say(0, *finished == "no power limit to restore" ? "" : *finished);
}

}  // namespace
}  // namespace rackwise::slurm

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "prolog" && mode != "epilog") {
    std::fprintf(stderr, "usage: rackwise-slurm-gpu-power prolog|epilog (run by spank_rackwise.so)\n");
    return 2;
  }
  try {
    const rackwise::slurm::JobScriptEnvironment env = rackwise::slurm::EnvironmentNow();
    return mode == "prolog" ? rackwise::slurm::Prolog(env) : rackwise::slurm::Epilog(env);
  } catch (const std::exception& e) {
    std::printf("internal error in rackwise-slurm-gpu-power %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
}
