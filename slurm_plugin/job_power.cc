// SPDX-License-Identifier: GPL-2.0-or-later
// The job prolog's view of a job's GPU power. See job_power.h.
#include "job_power.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "job_options.h"
#include "node_power/nvml_library.h"

namespace rackwise::slurm {

EnforcementSettings SettingsFor(const v1::PowerEnforcement& enforcement, const std::string& node) {
  EnforcementSettings settings;
  settings.enabled = enforcement.mode() != v1::POWER_LIMIT_MODE_DISABLED;
  const std::string library =
      enforcement.nvml_library().empty() ? node_power::kDefaultNvmlLibrary : enforcement.nvml_library();
  const std::string dir = enforcement.state_dir().empty() ? kDefaultStateDir : enforcement.state_dir();
  settings.nvml_library = absl::StrReplaceAll(library, {{"%n", node}});
  settings.state_file = absl::StrReplaceAll(dir, {{"%n", node}}) + "/gpu-power-limits";
  return settings;
}

std::string DescriptionPathBeside(const std::string& slurm_conf) {
  const std::string conf = slurm_conf.empty() ? "/etc/slurm/slurm.conf" : slurm_conf;
  const std::string::size_type slash = conf.rfind('/');
  return slash == std::string::npos ? "rackwise.yaml" : conf.substr(0, slash + 1) + "rackwise.yaml";
}

std::string LeaseOwner(const std::string& job_id) { return "slurm-job-" + job_id; }

absl::StatusOr<std::optional<node_power::JobGpuPower>> JobGpuPowerOn(const Topology& topology,
                                                                     const JobScriptEnvironment& env) {
  uint32_t job = 0;
  if (!absl::SimpleAtoi(env.job_id, &job)) {
    return absl::InvalidArgumentError(absl::StrCat("SLURM_JOB_ID '", env.job_id, "' is not a job id"));
  }
  if (env.job_gpus.empty()) return std::nullopt;
  const std::optional<NodeId> node = topology.FindNode(env.node);
  if (!node) return std::nullopt;
  node_power::JobGpuPower power;
  power.owner = LeaseOwner(env.job_id);
  const NodeType& type = topology.type_of(*node);
  for (absl::string_view item : absl::StrSplit(env.job_gpus, ',')) {
    int gpu = -1;
    if (!absl::SimpleAtoi(item, &gpu) || gpu < 0 || gpu >= type.gpus) {
      return absl::InvalidArgumentError(absl::StrCat("SLURM_JOB_GPUS '", env.job_gpus, "': '", std::string(item),
                                                     "' is not a GPU of ", env.node, " (", type.gpus, " GPUs)"));
    }
    power.gpus.push_back(gpu);
  }
  power.counted_mw = type.per_gpu;
  if (!env.gpu_watts.empty()) {
    absl::StatusOr<double> watts = ParseGpuWatts(env.gpu_watts);
    if (!watts.ok()) return watts.status();
    power.counted_mw = WattsToMilliwatts(*watts);
  }
  power.declared = power.counted_mw != type.per_gpu;
  return power;
}

}  // namespace rackwise::slurm
