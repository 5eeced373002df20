// SPDX-License-Identifier: GPL-2.0-or-later
// The node side of power steering on the Slurm face: every round, the steered limits file (steered_limits.h) is
// applied to this node's GPUs. A job is steered only while it holds a lease here (power_limit_leases.h: its
// prolog ran and its epilog has not): a line that outlives its job, or arrives before its prolog, must not leave a
// limit nobody gives back. Each GPU of a listed job is held at min(limit, the board's maximum); a job whose line
// disappeared goes back to min(declared, maximum); the epilog's restore at job end is unchanged (the steering
// limits are taken under the job's own lease, which keeps the limit in force before the job as the one to give
// back). Limits are compared with the board's every round, so a prolog that set the declared limit after a
// steered one, or anyone else's change, is corrected at the next round. Slurm-free, unit-tested with the fake NVML.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "node_power/gpu_power_control.h"
#include "steered_limits.h"

namespace rackwise::slurm {

class SteeredLimitsApplier {
 public:
  explicit SteeredLimitsApplier(std::string node) : node_(std::move(node)) {}

  struct Round {
    std::vector<std::string> log;     // one line per limit change, or per new problem
    std::vector<std::string> drains;  // causes to drain this node with (a limit that cannot be applied), once each
  };
  // One round: `limits` as read from the file, `control` this node's GPUs, `lease_file` the prolog's leases.
  Round Apply(const std::vector<SteeredLimit>& limits, node_power::GpuPowerControl& control,
              const std::string& lease_file);

  // Prometheus text: each steered GPU's limit, and counts of changes and failures.
  std::string Metrics() const;

 private:
  struct Held {
    Milliwatts target_mw = 0;  // per GPU, before the board's maximum
    Milliwatts declared_mw = 0;
    uint64_t generation = 0;
    std::vector<int> gpus;
    absl::flat_hash_map<int, Milliwatts> in_force;  // per GPU, after the last round
  };
  // Holds `job`'s GPUs at `held.target_mw` (capped by each board's maximum); false with a drain cause on failure.
  bool Hold(uint32_t job, Held& held, node_power::GpuPowerControl& control, const std::string& lease_file,
            Round* round);

  std::string node_;
  absl::flat_hash_map<uint32_t, Held> held_;   // jobs steered here (below or back at their declared watts)
  absl::flat_hash_set<std::string> reported_;  // problems already logged (job and target)
  uint64_t changes_ = 0, failures_ = 0;
};

}  // namespace rackwise::slurm
