// SPDX-License-Identifier: GPL-2.0-or-later
// The steered GPU limits file: what select/rackwise_cons_tres decided each running job's GPUs may draw, written
// beside its published ledger (StateSaveLocation) for the node-side service (steered_limits_applier.h) to apply.
// One job per line, and only the jobs held below the watts they declared; a job absent runs at its declared watts:
//   # rackwise steered GPU limits: job_id watts_per_gpu declared_watts_per_gpu generation node:gpu,gpu ...
//   1234 475.000 600.000 7 gpu01:0,1,2,3 gpu02:0,1
// The GPUs are carried per node (the numbers of SLURM_JOB_GPUS, as the prolog applies them) so that a node needs
// nothing else to find a job's GPUs, including boards whose prolog needed no limit. `declared` is what the node
// sets back when the job's line disappears. `generation` is the number of the change that set the job's limit (one
// counter for all jobs, rising with each change), to match a node's log line with slurmctld's. Slurm-free, so that it
// is unit-tested without a daemon.
#pragma once

#include <cstdint>
#include <string>

#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rackwise/ledger.h"
#include "rackwise/telemetry.h"

namespace rackwise::slurm {

// The file's name in StateSaveLocation (slurm.conf's, shared by the controllers of an HA pair; the nodes read it
// through shared storage or a copy, `rackwise-slurm-gpu-power follow --limits=PATH`).
inline constexpr char kSteeredLimitsFileName[] = "rackwise_gpu_limits";

struct SteeredLimit {
  uint32_t job_id = 0;
  Milliwatts limit_mw = 0;     // per GPU
  Milliwatts declared_mw = 0;  // per GPU
  uint64_t generation = 0;
  std::vector<std::pair<std::string, std::vector<int>>> gpus;  // node -> GPU indices there
  friend bool operator==(const SteeredLimit&, const SteeredLimit&) = default;
};

std::string SteeredLimitsToText(const std::vector<SteeredLimit>& limits);
// InvalidArgument "FILE:LINE: field NAME: what is wrong" for a malformed line; blank lines and '#' comments are
// skipped. A job listed twice is an error too (the node could not know which limit holds).
absl::StatusOr<std::vector<SteeredLimit>> ParseSteeredLimits(absl::string_view text, const std::string& file);

// Builds the file's lines from what steering holds (TelemetryTracker::lowered_limits) and the ledger's
// allocations, numbering each job's changes. Ids that are not Slurm job ids (not numbers) are skipped.
class SteeredLimitsBook {
 public:
  std::vector<SteeredLimit> Lines(const Ledger& ledger, const std::vector<LimitChange>& lowered);

 private:
  uint64_t next_generation_ = 1;
  absl::flat_hash_map<std::string, std::pair<Milliwatts, uint64_t>> last_;  // id -> limit, generation
};

}  // namespace rackwise::slurm
