// GpuPowerControl over NVIDIA's NVML, loaded at run time with dlopen so that nodes without the NVIDIA driver
// (and build machines) still load everything that links this library; only opening NVML fails there.
//
// The few NVML types and functions used are declared in nvml_library.cc from NVML's public API reference,
// not from nvml.h (which is not packaged here).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "node_power/gpu_power_control.h"

namespace rackwise::node_power {

// The soname the NVIDIA driver installs; dlopen finds it through the usual library search path.
inline constexpr char kDefaultNvmlLibrary[] = "libnvidia-ml.so.1";

// Loads the NVML library at `library_path` (a soname or a path), resolves the functions it needs and calls
// nvmlInit_v2 (or, in an NVML without it, nvmlInit). The returned object calls nvmlShutdown and unloads the library
// when destroyed. Unavailable if the library cannot be loaded or lacks a function the power limits need (init,
// shutdown, count, handle by index, limit constraints, get and set limit); the NVML error of init otherwise.
// Without nvmlErrorString, errors carry the API reference's words for the common codes; without
// nvmlDeviceGetPowerManagementDefaultLimit, default_mw is 0; without nvmlDeviceGetHandleByUUID (or nvmlDeviceGetIndex)
// or nvmlDeviceGetPowerUsage, IndexOfUuid or PowerUsage is Unimplemented, naming what is missing.
absl::StatusOr<std::unique_ptr<GpuPowerControl>> OpenNvml(const std::string& library_path = kDefaultNvmlLibrary);

}  // namespace rackwise::node_power
