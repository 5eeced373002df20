// NVML through dlopen: the function table, the mapping of nvmlReturn_t to absl::Status, and GpuPowerControl.
#include "node_power/nvml_library.h"

#include <dlfcn.h>

#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rackwise::node_power {
namespace {

// From NVML's API reference: return codes are an enum (0 = success), devices are opaque handles, limits and
// power are unsigned milliwatts.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorInvalidArgument = 2;
constexpr nvmlReturn_t kNvmlErrorNotSupported = 3;
constexpr nvmlReturn_t kNvmlErrorNoPermission = 4;
constexpr nvmlReturn_t kNvmlErrorNotFound = 6;
constexpr nvmlReturn_t kNvmlErrorDriverNotLoaded = 9;
constexpr nvmlReturn_t kNvmlErrorLibraryNotFound = 12;
constexpr nvmlReturn_t kNvmlErrorGpuIsLost = 15;

// The functions used, resolved by name from the loaded library.
struct NvmlFunctions {
  nvmlReturn_t (*init_v2)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*device_get_count_v2)(unsigned int*);
  nvmlReturn_t (*device_get_handle_by_index_v2)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*device_get_handle_by_uuid)(const char*, nvmlDevice_t*);
  nvmlReturn_t (*device_get_index)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*device_get_power_management_limit_constraints)(nvmlDevice_t, unsigned int*, unsigned int*);
  nvmlReturn_t (*device_get_power_management_default_limit)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*device_get_power_management_limit)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*device_set_power_management_limit)(nvmlDevice_t, unsigned int);
  nvmlReturn_t (*device_get_power_usage)(nvmlDevice_t, unsigned int*);
};

absl::StatusCode CodeOf(nvmlReturn_t result) {
  switch (result) {
    case kNvmlErrorInvalidArgument: return absl::StatusCode::kInvalidArgument;
    case kNvmlErrorNotSupported: return absl::StatusCode::kFailedPrecondition;
    case kNvmlErrorNoPermission: return absl::StatusCode::kPermissionDenied;
    case kNvmlErrorNotFound: return absl::StatusCode::kNotFound;
    case kNvmlErrorDriverNotLoaded:
    case kNvmlErrorLibraryNotFound:
    case kNvmlErrorGpuIsLost: return absl::StatusCode::kUnavailable;
    default: return absl::StatusCode::kInternal;
  }
}

class NvmlLibrary final : public GpuPowerControl {
 public:
  NvmlLibrary(void* handle, std::string path, const NvmlFunctions& nvml)
      : handle_(handle), path_(std::move(path)), nvml_(nvml) {}
  ~NvmlLibrary() override {
    nvml_.shutdown();
    dlclose(handle_);
  }
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  absl::StatusOr<int> DeviceCount() override {
    unsigned int count = 0;
    if (nvmlReturn_t r = nvml_.device_get_count_v2(&count); r != kNvmlSuccess) {
      return Error("nvmlDeviceGetCount_v2()", r);
    }
    if (count > static_cast<unsigned int>(std::numeric_limits<int>::max())) {
      return absl::InternalError(absl::StrCat(path_, ": nvmlDeviceGetCount_v2() returned ", count, " GPUs"));
    }
    return static_cast<int>(count);
  }

  absl::StatusOr<int> IndexOfUuid(std::string_view uuid) override {
    const std::string name(uuid);
    nvmlDevice_t device = nullptr;
    if (nvmlReturn_t r = nvml_.device_get_handle_by_uuid(name.c_str(), &device); r != kNvmlSuccess) {
      return Error(absl::StrCat("nvmlDeviceGetHandleByUUID(", name, ")"), r);
    }
    unsigned int index = 0;
    if (nvmlReturn_t r = nvml_.device_get_index(device, &index); r != kNvmlSuccess) {
      return Error(absl::StrCat("nvmlDeviceGetIndex(", name, ")"), r);
    }
    return static_cast<int>(index);
  }

  absl::StatusOr<GpuPowerLimits> Limits(int index) override {
    absl::StatusOr<nvmlDevice_t> device = Device(index);
    if (!device.ok()) return device.status();
    unsigned int min = 0, max = 0, fallback = 0, current = 0;
    if (nvmlReturn_t r = nvml_.device_get_power_management_limit_constraints(*device, &min, &max); r != kNvmlSuccess) {
      return Error(absl::StrCat("nvmlDeviceGetPowerManagementLimitConstraints(GPU ", index, ")"), r);
    }
    if (nvmlReturn_t r = nvml_.device_get_power_management_default_limit(*device, &fallback); r != kNvmlSuccess) {
      return Error(absl::StrCat("nvmlDeviceGetPowerManagementDefaultLimit(GPU ", index, ")"), r);
    }
    if (nvmlReturn_t r = nvml_.device_get_power_management_limit(*device, &current); r != kNvmlSuccess) {
      return Error(absl::StrCat("nvmlDeviceGetPowerManagementLimit(GPU ", index, ")"), r);
    }
    return GpuPowerLimits{min, max, fallback, current};
  }

  absl::Status SetLimit(int index, int64_t limit_mw) override {
    if (limit_mw < 0 || limit_mw > std::numeric_limits<unsigned int>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("GPU ", index, ": power limit ", limit_mw, " mW out of range"));
    }
    absl::StatusOr<nvmlDevice_t> device = Device(index);
    if (!device.ok()) return device.status();
    nvmlReturn_t r = nvml_.device_set_power_management_limit(*device, static_cast<unsigned int>(limit_mw));
    if (r != kNvmlSuccess) {
      return Error(absl::StrCat("nvmlDeviceSetPowerManagementLimit(GPU ", index, ", ", limit_mw, " mW)"), r);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> PowerUsage(int index) override {
    absl::StatusOr<nvmlDevice_t> device = Device(index);
    if (!device.ok()) return device.status();
    unsigned int usage = 0;
    if (nvmlReturn_t r = nvml_.device_get_power_usage(*device, &usage); r != kNvmlSuccess) {
      return Error(absl::StrCat("nvmlDeviceGetPowerUsage(GPU ", index, ")"), r);
    }
    return static_cast<int64_t>(usage);
  }

 private:
  absl::StatusOr<nvmlDevice_t> Device(int index) {
    if (index < 0) return absl::InvalidArgumentError(absl::StrCat("GPU index ", index, " is negative"));
    nvmlDevice_t device = nullptr;
    if (nvmlReturn_t r = nvml_.device_get_handle_by_index_v2(static_cast<unsigned int>(index), &device);
        r != kNvmlSuccess) {
      return Error(absl::StrCat("nvmlDeviceGetHandleByIndex_v2(GPU ", index, ")"), r);
    }
    return device;
  }

  // "<library>: <call>: <NVML's words> (NVML error <code>)".
  absl::Status Error(const std::string& call, nvmlReturn_t result) const {
    const char* words = nvml_.error_string(result);
    return absl::Status(CodeOf(result), absl::StrCat(path_, ": ", call, ": ", words ? words : "unknown error",
                                                     " (NVML error ", result, ")"));
  }

  void* handle_;
  std::string path_;
  NvmlFunctions nvml_;
};

template <typename Function>
bool Resolve(void* handle, const char* name, Function*& function, std::string& missing) {
  function = reinterpret_cast<Function*>(dlsym(handle, name));
  if (function == nullptr) absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
  return function != nullptr;
}

absl::StatusOr<NvmlFunctions> ResolveAll(void* handle, const std::string& path) {
  NvmlFunctions f{};
  std::string missing;
  Resolve(handle, "nvmlInit_v2", f.init_v2, missing);
  Resolve(handle, "nvmlShutdown", f.shutdown, missing);
  Resolve(handle, "nvmlErrorString", f.error_string, missing);
  Resolve(handle, "nvmlDeviceGetCount_v2", f.device_get_count_v2, missing);
  Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", f.device_get_handle_by_index_v2, missing);
  Resolve(handle, "nvmlDeviceGetHandleByUUID", f.device_get_handle_by_uuid, missing);
  Resolve(handle, "nvmlDeviceGetIndex", f.device_get_index, missing);
  Resolve(handle, "nvmlDeviceGetPowerManagementLimitConstraints", f.device_get_power_management_limit_constraints,
          missing);
  Resolve(handle, "nvmlDeviceGetPowerManagementDefaultLimit", f.device_get_power_management_default_limit, missing);
  Resolve(handle, "nvmlDeviceGetPowerManagementLimit", f.device_get_power_management_limit, missing);
  Resolve(handle, "nvmlDeviceSetPowerManagementLimit", f.device_set_power_management_limit, missing);
  Resolve(handle, "nvmlDeviceGetPowerUsage", f.device_get_power_usage, missing);
  if (!missing.empty()) {
    return absl::UnavailableError(absl::StrCat(path, ": NVML library lacks ", missing));
  }
  return f;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GpuPowerControl>> OpenNvml(const std::string& library_path) {
  void* handle = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::UnavailableError(absl::StrCat("cannot load NVML (", library_path, "): ", why ? why : "dlopen failed"));
  }
  absl::StatusOr<NvmlFunctions> nvml = ResolveAll(handle, library_path);
  if (!nvml.ok()) {
    dlclose(handle);
    return nvml.status();
  }
  if (nvmlReturn_t r = nvml->init_v2(); r != kNvmlSuccess) {
    const char* words = nvml->error_string(r);
    absl::Status error(CodeOf(r), absl::StrCat(library_path, ": nvmlInit_v2(): ", words ? words : "unknown error",
                                               " (NVML error ", r, ")"));
    dlclose(handle);
    return error;
  }
  return std::unique_ptr<GpuPowerControl>(new NvmlLibrary(handle, library_path, *nvml));
}

}  // namespace rackwise::node_power
