// SPDX-License-Identifier: GPL-2.0-or-later
// What slurmd's job prolog needs to hold a job's GPUs to the watts the select plugin counted: the job as the
// prolog's environment describes it, rackwise.yaml's power_enforcement settings with their defaults, and the
// watts per GPU the ledger counted on this node (declared with --gpu-watts, or the node type's
// (node_watts - idle_watts) / gpus). Pure C++ and Slurm-free, so that it is unit-tested without slurmd; the
// SPANK plugin reads the environment and node_power applies the result.
//
// The node side never depends on rackwise.yaml being valid at the moment a job starts or ends: every time it
// loads the file, the node keeps a copy as the last description it accepted (in its cache directory, a SPANK
// plugin argument), and when the file is broken the prolog applies limits from that copy (or, with none, from
// the watts the job carries) and the epilog restores from the lease file that copy names. A bad file neither
// refuses a job nor drains a node; the line printed for slurmd's log says which description was used and why.
#pragma once

#include <functional>
#include <memory>
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
  std::string state_dir;
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
// The same without any description: what the job carries. The watts counted are the declared ones, or unknown
// (nullopt) for a job that declared none; GPU indices are only checked to be numbers.
absl::StatusOr<std::optional<node_power::JobGpuPower>> JobGpuPowerCarried(const JobScriptEnvironment& env);

// Where the node keeps the last description it accepted: `<cache_dir>/rackwise.last-accepted.yaml`, "%n" in
// cache_dir replaced by the node's name. cache_dir is spank_rackwise.so's `cache_dir=` argument in
// plugstack.conf. Not beside the lease file: state_dir comes from the description itself.
inline constexpr char kDefaultCacheDir[] = "/var/lib/rackwise";
std::string AcceptedCopyPath(const std::string& cache_dir, const std::string& node);

// The description a job prolog or epilog works with.
struct NodeDescription {
  std::string file;                          // the file used (rackwise.yaml or the copy); empty: none
  EnforcementSettings settings;              // its power_enforcement; the defaults when there is none
  std::shared_ptr<const Topology> topology;  // null when there is none
  std::string note;  // what was used instead of rackwise.yaml and why, or a copy that could not be kept
};

// Reads rackwise.yaml beside slurm.conf. A valid file is used, and kept as the accepted copy when it differs
// from it (write-then-rename: concurrent prologs on one host are safe). A broken one falls back to the copy,
// then to no description at all. Never fails: the note says what happened.
NodeDescription LoadNodeDescription(const JobScriptEnvironment& env, const std::string& cache_dir);

// What rackwise-slurm-gpu-power exits with and prints (one line, may be empty): 0 the job may run here (or its
// limits were given back), 1 it must not (the plugin drains the node with `line` as the reason).
struct JobScriptResult {
  int exit_code = 0;
  std::string line;
};
// Opens NVML (or, in tests, a fake) from a library path or soname.
using NvmlOpener =
    std::function<absl::StatusOr<std::unique_ptr<node_power::GpuPowerControl>>(const std::string& library)>;

// The job prolog: gives back limits left on the job's GPUs by finished jobs (refusing the job if that fails),
// then holds them to the watts counted.
JobScriptResult RunProlog(const JobScriptEnvironment& env, const std::string& cache_dir, const NvmlOpener& open);
// The job epilog: gives back every limit the job holds on this node, from the lease file alone.
JobScriptResult RunEpilog(const JobScriptEnvironment& env, const std::string& cache_dir, const NvmlOpener& open);
// At slurmd's start: reads rackwise.yaml and keeps it as the accepted copy, so that a node whose file breaks
// before it ran a single job still has a description to work from. Always 0 (a bad file must not stop slurmd);
// the line says what was kept, or why nothing was.
JobScriptResult RunAccept(const JobScriptEnvironment& env, const std::string& cache_dir);

}  // namespace rackwise::slurm
