// SPDX-License-Identifier: GPL-2.0-or-later
// spank_rackwise.so: adds `--nvlink=required|preferred|none` and `--gpu-watts=N` to sbatch, srun and salloc.
// Values are checked where the user types them (a bad value fails the submission with a message) and are
// stored in the job's spank_job_env as RACKWISE_NVLINK / RACKWISE_GPU_WATTS, which slurmctld keeps with the
// job; select/rackwise_cons_tres reads them back from there. Defaults and limits are the administrator's, in
// rackwise.yaml's policy block.
//
// In slurmd (slurm_spank_job_prolog / _epilog, run as root), it holds the job's GPUs on the node to the watts
// per GPU the select plugin counted (node_power::JobPowerEnforcer, settings in rackwise.yaml's
// power_enforcement) and gives the previous limits back at the end. Fail closed: when a limit the job needs
// cannot be set, the prolog fails (Slurm requeues the job) after draining the node with a reason naming
// rackwise and the cause, which Slurm keeps (it only writes its own "Prolog error" on a node not yet drained).
//
// Licensed under the GNU General Public License, version 2 or (at your option) any later version, like the
// Slurm it runs inside.
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "job_options.h"
#include "job_power.h"
#include "node_power/job_power_enforcer.h"
#include "node_power/nvml_library.h"
#include "rackwise/cluster_description.h"

extern "C" {  // spank.h declares the plugin entry points without C linkage of its own
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

namespace {

std::string g_nvlink;     // validated value, empty when not given
std::string g_gpu_watts;  // validated value, empty when not given

int OnNvlink(int, const char* optarg, int) noexcept {
  try {
    absl::StatusOr<rackwise::Locality> locality = rackwise::slurm::ParseNvlink(optarg ? optarg : "");
    if (!locality.ok()) {
      slurm_error("rackwise: %s", std::string(locality.status().message()).c_str());
      return -1;
    }
    g_nvlink = rackwise::slurm::LocalityName(*locality);
    return 0;
  } catch (...) {
    slurm_error("rackwise: --nvlink: internal error");
    return -1;
  }
}

int OnGpuWatts(int, const char* optarg, int) noexcept {
  try {
    absl::StatusOr<double> watts = rackwise::slurm::ParseGpuWatts(optarg ? optarg : "");
    if (!watts.ok()) {
      slurm_error("rackwise: %s", std::string(watts.status().message()).c_str());
      return -1;
    }
    g_gpu_watts = optarg;
    return 0;
  } catch (...) {
    slurm_error("rackwise: --gpu-watts: internal error");
    return -1;
  }
}

struct spank_option g_options[] = {
    {const_cast<char*>("nvlink"), const_cast<char*>("required|preferred|none"),
     const_cast<char*>("rackwise: keep the job in the fewest NVLink domains (required: wait for them; "
                       "preferred: start spread out if it must; none: fill fragments)"),
     1, 0, OnNvlink},
    {const_cast<char*>("gpu-watts"), const_cast<char*>("N"),
     const_cast<char*>("rackwise: watts each of the job's GPUs draws (default: the node type's full-load draw)"), 1, 1,
     OnGpuWatts},
};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

rackwise::slurm::JobScriptEnvironment JobScriptEnvironmentNow() {
  return {Env("SLURM_JOB_ID"), Env("SLURMD_NODENAME"), Env("SLURM_JOB_GPUS"),
          Env(rackwise::slurm::kPrologGpuWattsEnv), Env("SLURM_CONF")};
}

// Drains `node` with `reason` (prefixed "rackwise: "), so that no further job lands on GPUs whose power limit
// rackwise cannot hold, and the administrator sees why in sinfo -R / scontrol show node.
void DrainNode(const std::string& node, const std::string& cause) {
  std::string reason = "rackwise: " + cause;
  if (reason.size() > 400) reason = reason.substr(0, 397) + "...";
  update_node_msg_t update;
  slurm_init_update_node_msg(&update);
  update.node_names = const_cast<char*>(node.c_str());
  update.node_state = NODE_STATE_DRAIN;
  update.reason = const_cast<char*>(reason.c_str());
  update.reason_uid = 0;
  if (slurm_update_node(&update) != SLURM_SUCCESS) {
    slurm_error("rackwise: cannot drain %s (%s): %s", node.c_str(), reason.c_str(), slurm_strerror(slurm_get_errno()));
  }
}

struct JobScriptContext {
  rackwise::slurm::JobScriptEnvironment env;
  rackwise::slurm::EnforcementSettings settings;
  std::unique_ptr<rackwise::Topology> topology;
};

// Loads rackwise.yaml for a job script. On error the status says what is wrong with the file.
absl::StatusOr<JobScriptContext> LoadJobScriptContext() {
  JobScriptContext context;
  context.env = JobScriptEnvironmentNow();
  rackwise::Diagnostics diagnostics;
  const std::string path = rackwise::slurm::DescriptionPathBeside(context.env.slurm_conf);
  absl::StatusOr<rackwise::v1::ClusterDescription> description = rackwise::LoadClusterDescription(path, &diagnostics);
  if (!description.ok()) return description.status();
  absl::StatusOr<rackwise::Topology> topology = rackwise::Topology::Build(*description);
  if (!topology.ok()) return topology.status();
  context.settings = rackwise::slurm::SettingsFor(description->power_enforcement(), context.env.node);
  context.topology = std::make_unique<rackwise::Topology>(*std::move(topology));
  return context;
}

rackwise::node_power::JobPowerEnforcer EnforcerFor(const rackwise::slurm::EnforcementSettings& settings) {
  const std::string library = settings.nvml_library;
  return rackwise::node_power::JobPowerEnforcer([library] { return rackwise::node_power::OpenNvml(library); },
                                                settings.state_file);
}

// Fails the job on this node: drains the node with the cause and returns the prolog's failure.
int RefuseJob(const rackwise::slurm::JobScriptEnvironment& env, const std::string& cause) {
  slurm_error("rackwise: job %s: %s", env.job_id.c_str(), cause.c_str());
  DrainNode(env.node, "job " + env.job_id + ": " + cause);
  return -1;
}

int JobProlog() {
  absl::StatusOr<JobScriptContext> context = LoadJobScriptContext();
  const rackwise::slurm::JobScriptEnvironment env = JobScriptEnvironmentNow();
  if (!context.ok()) {
    // Without the description the counted watts are unknown: only a job that declared its own must not run.
    if (env.gpu_watts.empty() || env.job_gpus.empty()) {
      slurm_error("rackwise: job %s: no GPU power limit: %s", env.job_id.c_str(),
                  std::string(context.status().message()).c_str());
      return 0;
    }
    return RefuseJob(env, "cannot enforce --gpu-watts=" + env.gpu_watts + ": " +
                              std::string(context.status().message()));
  }
  if (!context->settings.enabled) return 0;
  absl::StatusOr<std::optional<rackwise::node_power::JobGpuPower>> job =
      rackwise::slurm::JobGpuPowerOn(*context->topology, env);
  if (!job.ok()) return RefuseJob(env, std::string(job.status().message()));
  if (!*job) return 0;
  absl::StatusOr<std::string> started = EnforcerFor(context->settings).Start(**job);
  if (!started.ok()) return RefuseJob(env, std::string(started.status().message()));
  slurm_info("rackwise: job %s: %s", env.job_id.c_str(), started->c_str());
  return 0;
}

int JobEpilog() {
  absl::StatusOr<JobScriptContext> context = LoadJobScriptContext();
  const rackwise::slurm::JobScriptEnvironment env = JobScriptEnvironmentNow();
  if (!context.ok()) {
    // Limits left in place only hold GPUs lower than counted; the next job's prolog refuses their GPUs.
    slurm_error("rackwise: job %s: cannot restore GPU power limits: %s", env.job_id.c_str(),
                std::string(context.status().message()).c_str());
    return 0;
  }
  absl::StatusOr<std::string> finished = EnforcerFor(context->settings).Finish(rackwise::slurm::LeaseOwner(env.job_id));
  if (!finished.ok()) return RefuseJob(env, std::string(finished.status().message()));
  slurm_info("rackwise: job %s: %s", env.job_id.c_str(), finished->c_str());
  return 0;
}

}  // namespace

// Built with -fvisibility=hidden: what Slurm looks up is made visible here, and the version script
// (spank.map) keeps everything else local.
#pragma GCC visibility push(default)
extern "C" {

extern const char plugin_name[] = "rackwise";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;

int slurm_spank_init(spank_t sp, int ac, char** av) {
  for (struct spank_option& option : g_options) {
    if (spank_option_register(sp, &option) != ESPANK_SUCCESS) {
      slurm_error("rackwise: cannot register --%s", option.name);
      return -1;
    }
  }
  return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  const spank_context_t context = spank_context();
  if (context != S_CTX_LOCAL && context != S_CTX_ALLOCATOR) return 0;
  if (!g_nvlink.empty() &&
      spank_job_control_setenv(sp, rackwise::slurm::kNvlinkEnv, g_nvlink.c_str(), 1) != ESPANK_SUCCESS) {
    slurm_error("rackwise: cannot pass --nvlink to the job");
    return -1;
  }
  if (!g_gpu_watts.empty() &&
      spank_job_control_setenv(sp, rackwise::slurm::kGpuWattsEnv, g_gpu_watts.c_str(), 1) != ESPANK_SUCCESS) {
    slurm_error("rackwise: cannot pass --gpu-watts to the job");
    return -1;
  }
  return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char** av) {
  try {
    return JobProlog();
  } catch (...) {
    return RefuseJob(JobScriptEnvironmentNow(), "internal error while setting GPU power limits");
  }
}

int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
  try {
    return JobEpilog();
  } catch (...) {
    slurm_error("rackwise: internal error while restoring GPU power limits");
    return -1;
  }
}

}  // extern "C"
#pragma GCC visibility pop
