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
//
// Before any of that, every job (declared or not, limited or not) goes through the leases: a GPU it was given
// that is still limited for another owner is one whose restore failed when that owner finished (the scheduler
// only hands a GPU on once the previous job's end on this machine is over). Its owner's limits are given back
// first; if that fails, the job is refused, so that a GPU left limited never serves another job unseen.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "node_power/gpu_power_control.h"
#include "node_power/power_limit_leases.h"

namespace rackwise::node_power {

// A job's GPUs on this machine and the watts counted for each.
struct JobGpuPower {
  std::string owner;      // a job id or pod UID, no whitespace (see PowerLimitLeases)
  std::vector<int> gpus;  // GPU indices as NVML counts them
  // Watts per GPU the scheduler counted, in milliwatts; nullopt when they are not known here (nothing is limited
  // then, but GPUs left limited by earlier owners are still given back).
  std::optional<int64_t> counted_mw;
  bool declared = false;  // the job declared watts other than its node type's default
};

// What Start says when the job's watts are not known and nothing was given back.
inline constexpr char kNoLimitSet[] = "no power limit set";

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
  absl::StatusOr<std::string> GiveBackStale(const JobGpuPower& job, std::unique_ptr<GpuPowerControl>* control);
  absl::StatusOr<std::string> Limit(const JobGpuPower& job, GpuPowerControl& control);

  GpuPowerOpener open_;
  std::string state_file_;
};

}  // namespace rackwise::node_power
