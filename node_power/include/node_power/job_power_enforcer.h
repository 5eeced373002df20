// Holds a job's GPUs on this machine to the watts per GPU the scheduler counted for them, and gives the
// previous limits back when the job ends. Shared by the Slurm face (the SPANK plugin's job prolog and epilog in
// slurmd) and the Kubernetes node agent: the face says which GPUs a job has and what was counted; this decides
// what to set, through PowerLimitLeases.
//
// The rule, per GPU: a board whose maximum is at or below the counted watts needs no limit (it cannot draw
// more than was counted); otherwise its limit becomes the counted watts, and a board that cannot be held that
// low (below its minimum), or refuses, fails the job. Without NVML at all, a job that declared its own watts
// fails (fail closed) while a job counted at its node type's default runs as it is (nothing was promised
// beyond what the node type says).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "node_power/gpu_power_control.h"
#include "node_power/power_limit_leases.h"

namespace rackwise::node_power {

// A job's GPUs on this machine and the watts counted for each.
struct JobGpuPower {
  std::string owner;       // a job id or pod UID, no whitespace (see PowerLimitLeases)
  std::vector<int> gpus;   // GPU indices as NVML counts them
  int64_t counted_mw = 0;  // watts per GPU the scheduler counted, in milliwatts
  bool declared = false;   // the job declared watts other than its node type's default
};

// Opens NVML (or a fake) when a job needs it; called at most once per Start or Finish.
using GpuPowerOpener = std::function<absl::StatusOr<std::unique_ptr<GpuPowerControl>>()>;

class JobPowerEnforcer {
 public:
  // `state_file`: the PowerLimitLeases file (its directory must exist).
  JobPowerEnforcer(GpuPowerOpener open, std::string state_file);

  // Applies the job's limits. OK: the job may run here; the message says what was done (for the log). An
  // error: the job must not run on this machine; the message says why, for an administrator.
  absl::StatusOr<std::string> Start(const JobGpuPower& job);

  // Gives back every limit set for `owner`. Opens NVML only if something is to be given back. OK with a
  // message for the log; an error names the GPUs left at the job's limit (their leases are kept).
  absl::StatusOr<std::string> Finish(std::string_view owner);

 private:
  GpuPowerOpener open_;
  std::string state_file_;
};

}  // namespace rackwise::node_power
