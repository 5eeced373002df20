// Power limits that rackwise sets on GPUs on behalf of an owner (a Slurm job id, a pod UID), and gives back.
//
// Acquire(owner, gpus, limit) records each GPU's limit in force in a state file BEFORE changing it, then sets
// the new limit; Release(owner) puts the recorded limits back. The state file is what makes this safe:
//  - all or nothing: if one GPU refuses, the GPUs already changed by that call are set back, and the error
//    says which GPU refused and why (fail closed: the caller must not run the job);
//  - a limit outside a board's [min, max] is refused before anything changes;
//  - a GPU leased to another owner is refused (FailedPrecondition), also across process restarts and across
//    processes (slurmd runs each prolog and epilog in its own process: an flock on "<state>.lock" serialises
//    them);
//  - Acquire twice and Release twice are no-ops the second time;
//  - a limit is only given back if it is still the one rackwise set: if someone changed it since, it is left
//    as found (and reported), so that rackwise never "restores" over a limit it did not set.
// A Release whose restore fails keeps the lease in the file, so that a later Release retries it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "node_power/gpu_power_control.h"

namespace rackwise::node_power {

// One GPU whose limit rackwise set, as kept in the state file.
struct PowerLimitLease {
  int gpu = 0;              // index, as GpuPowerControl counts
  std::string owner;        // who holds it: no whitespace
  int64_t limit_mw = 0;     // the limit rackwise set
  int64_t previous_mw = 0;  // the limit in force before, given back on Release
  bool operator==(const PowerLimitLease&) const = default;
};

// What Release did with one lease.
struct ReleasedLease {
  PowerLimitLease lease;
  int64_t found_mw = 0;   // the limit in force when released
  bool restored = false;  // previous_mw was set back; false: found_mw was already previous_mw, or someone else
                          // had changed the limit (found_mw is neither limit_mw nor previous_mw) and it was left
};

class PowerLimitLeases {
 public:
  // `control` is not owned and must outlive this object. `state_file` (and its directory, with any missing
  // parent, see MakeTrustedDirectory) is created by the first Acquire; Release and List of a missing file hold
  // nothing.
  // Thread-compatible; separate processes may share a state file.
  PowerLimitLeases(GpuPowerControl* control, std::string state_file);

  // Sets the power limit of each GPU in `gpus` to `limit_mw` for `owner`. InvalidArgument for a bad owner,
  // an empty or repeated GPU list or an index the machine does not have; OutOfRange for a limit outside a
  // board's range; FailedPrecondition for a GPU another owner holds; the GpuPowerControl's error if a call
  // fails (everything this call changed is then set back). Acquiring again for the same owner re-asserts the
  // limit and keeps the first recorded previous limit.
  absl::Status Acquire(std::string_view owner, const std::vector<int>& gpus, int64_t limit_mw);

  // Gives back every GPU `owner` holds. An owner holding nothing is not an error (returns an empty list).
  // If a GPU cannot be restored its lease stays in the file and the error names it.
  absl::StatusOr<std::vector<ReleasedLease>> Release(std::string_view owner);

  // The leases in the state file.
  absl::StatusOr<std::vector<PowerLimitLease>> List() const;

  const std::string& state_file() const { return state_file_; }

 private:
  absl::Status CheckRequest(std::string_view owner, const std::vector<int>& gpus);
  absl::Status SetAll(const std::vector<PowerLimitLease>& leases, const std::vector<GpuPowerLimits>& before,
                      std::vector<PowerLimitLease>& kept);

  GpuPowerControl* control_;
  std::string state_file_;
};

}  // namespace rackwise::node_power
