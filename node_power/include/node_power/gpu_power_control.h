// The power controls of the GPUs in one machine, as a node-side enforcer needs them: how many GPUs there are,
// which index a UUID names, the range a board's power limit may take, the limit in force, and setting it.
// NVML implements it (nvml_library.h); tests can implement it too. Milliwatts throughout, as NVML counts.
//
// Errors are absl::Status values whose message names the failing call, the GPU and the driver's own words, so
// that they can be shown to an administrator as they are (a drain reason, a log line, a metric label).
// Not thread-safe unless an implementation says otherwise.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rackwise::node_power {

// A board's power-limit range and state, in milliwatts.
struct GpuPowerLimits {
  int64_t min_mw = 0;      // lowest limit the board accepts
  int64_t max_mw = 0;      // highest limit the board accepts
  int64_t default_mw = 0;  // the limit the board boots with (0: the driver cannot say)
  int64_t current_mw = 0;  // the limit in force now
};

class GpuPowerControl {
 public:
  virtual ~GpuPowerControl() = default;

  // GPUs visible to this process; indices run from 0 to DeviceCount() - 1.
  virtual absl::StatusOr<int> DeviceCount() = 0;
  // The index of the GPU with this UUID ("GPU-8f6e..."); NotFound if none has it.
  virtual absl::StatusOr<int> IndexOfUuid(std::string_view uuid) = 0;
  virtual absl::StatusOr<GpuPowerLimits> Limits(int index) = 0;
  // Sets the power limit of GPU `index` (needs root on real hardware). The board refuses values outside
  // [min_mw, max_mw]; callers check first to give a clearer error.
  virtual absl::Status SetLimit(int index, int64_t limit_mw) = 0;
  // Power the board draws now.
  virtual absl::StatusOr<int64_t> PowerUsage(int index) = 0;
};

}  // namespace rackwise::node_power
