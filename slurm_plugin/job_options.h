// SPDX-License-Identifier: GPL-2.0-or-later
// The per-job rackwise options as they travel through Slurm: the SPANK plugin parses `--nvlink=` and
// `--gpu-watts=` on sbatch/srun/salloc and stores them in the job's spank_job_env as RACKWISE_NVLINK and
// RACKWISE_GPU_WATTS; the select plugin reads them back in slurmctld. One parser serves both sides so that
// what a user can type and what slurmctld accepts never drift apart. Pure: no Slurm headers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/locality.h"
#include "rackwise/placement_policy.h"
#include "rackwise/power_bounds.h"

namespace rackwise::slurm {

inline constexpr char kNvlinkEnv[] = "RACKWISE_NVLINK";
inline constexpr char kGpuWattsEnv[] = "RACKWISE_GPU_WATTS";

struct JobOptions {
  std::optional<Locality> locality;  // unset: the policy's default
  double watts_per_gpu = 0;          // 0: the node type's default draw
};

// "required" | "preferred" | "none" (case-insensitive). Anything else: InvalidArgument naming the option.
absl::StatusOr<Locality> ParseNvlink(std::string_view value);
// A number of watts within the core's bounds (rackwise/power_bounds.h: ParseWattsPerGpu), such as "700" or
// "700.5". Anything else: InvalidArgument naming the option.
absl::StatusOr<double> ParseGpuWatts(std::string_view value);

// Reads the options from "NAME=value" entries (a job's spank_job_env). Unknown names are ignored; a malformed
// value of a known name is InvalidArgument (the SPANK plugin refuses it at submit, so this means the
// environment was set some other way).
absl::StatusOr<JobOptions> ParseJobEnv(const std::vector<std::string_view>& env);

using rackwise::LocalityName;  // the core's spelling (rackwise/locality.h)

}  // namespace rackwise::slurm
