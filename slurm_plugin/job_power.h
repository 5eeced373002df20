// SPDX-License-Identifier: GPL-2.0-or-later
// What slurmd's job prolog needs to hold a job's GPUs to the watts the select plugin counted: the job as the
// prolog's environment describes it, rackwise.yaml's power_enforcement settings with their defaults, and the
// watts per GPU the ledger counted on this node (declared with --gpu-watts, or the node type's
// (node_watts - idle_watts) / gpus). Pure C++ and Slurm-free, so that it is unit-tested without slurmd; the
// SPANK plugin reads the environment and node_power applies the result.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "node_power/job_power_enforcer.h"
#include "rackwise/topology.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::slurm {

// The prolog's and epilog's environment, as slurmd builds it (the same in 22.05 and 24.11): the job's
// spank_job_env comes with a "SPANK_" prefix, the GRES plugin adds SLURM_JOB_GPUS.
struct JobScriptEnvironment {
  std::string job_id;      // SLURM_JOB_ID
  std::string node;        // SLURMD_NODENAME
  std::string job_gpus;    // SLURM_JOB_GPUS, e.g. "0,1,5" (gres.conf device numbers); empty: no GPUs here
  std::string gpu_watts;   // SPANK_RACKWISE_GPU_WATTS (--gpu-watts); empty: not declared
  std::string slurm_conf;  // SLURM_CONF
};
inline constexpr char kPrologGpuWattsEnv[] = "SPANK_RACKWISE_GPU_WATTS";

// rackwise.yaml's power_enforcement with defaults applied; "%n" in a path is replaced by the node's name (for
// several slurmd on one host, as in tests).
struct EnforcementSettings {
  bool enabled = true;
  std::string nvml_library;
  std::string state_file;  // <state_dir>/gpu-power-limits
};
inline constexpr char kDefaultStateDir[] = "/var/lib/rackwise";
EnforcementSettings SettingsFor(const v1::PowerEnforcement& enforcement, const std::string& node);

// rackwise.yaml beside slurm.conf (the select plugin reads the same file).
std::string DescriptionPathBeside(const std::string& slurm_conf);

// The lease owner for a Slurm job: "slurm-job-<id>".
std::string LeaseOwner(const std::string& job_id);

// The job's GPUs on this node and the watts counted for each. nullopt when there is nothing to enforce (no
// GPUs here, or a node the description does not list). InvalidArgument for a malformed SLURM_JOB_GPUS or
// watts value, or a job id that is not a number.
absl::StatusOr<std::optional<node_power::JobGpuPower>> JobGpuPowerOn(const Topology& topology,
                                                                     const JobScriptEnvironment& env);

}  // namespace rackwise::slurm
