// SPDX-License-Identifier: GPL-2.0-or-later
// `rackwise-slurm-gpu-power follow`: power steering's service on a Slurm node. Every interval it reads the steered
// limits file the select plugin writes (steered_limits.h; on shared storage, or copied to the node), applies it to
// this node's GPUs (steered_limits_applier.h), prints each change with a UTC time, drains the node through
// scontrol with a "rackwise: " reason when a limit cannot be applied (as the prolog does), and rewrites the
// metrics file (Prometheus text, for node_exporter's textfile collector). A missing or malformed file changes
// nothing (said once): the limits stay as they are rather than jump back up on a read error.
#pragma once

#include <string>

#include "job_power.h"

namespace rackwise::slurm {

struct FollowOptions {
  std::string limits_path;   // "%n": the node's name
  std::string metrics_path;  // empty: none; "%n": the node's name
  std::string scontrol = "scontrol";
  double interval_s = 1;
};

// Runs until SIGTERM or SIGINT; returns the exit code (0).
int FollowSteeredLimits(JobScriptEnvironment env, const std::string& cache_dir, const FollowOptions& options,
                        const NvmlOpener& open);

}  // namespace rackwise::slurm
