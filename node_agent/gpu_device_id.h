// What the kubelet reports as an nvidia.com/gpu device id, read into a GPU reference. The NVIDIA device plugin
// names GPUs by UUID ("GPU-8f2c...", the default) or by index ("0", with --device-id-strategy=index); with
// time-slicing each replica carries a suffix ("GPU-8f2c...::3") that names the same board. MIG devices
// ("MIG-...") are refused: a power limit applies to a whole board, which a MIG slice does not own.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rackwise::node_agent {

// Indices larger than this are refused as malformed (NVML numbers boards from 0 on one node).
inline constexpr int kMaxGpuIndex = 1023;

struct GpuDeviceRef {
  std::optional<int> index;  // set for index ids
  std::string uuid;          // set for UUID ids
};

// Errors are InvalidArgument and quote the id.
absl::StatusOr<GpuDeviceRef> ParseGpuDeviceId(absl::string_view id);

}  // namespace rackwise::node_agent
