// NVML through dlopen: the function table, the mapping of nvmlReturn_t to absl::Status, and GpuPowerControl.
#include "node_power/nvml_library.h"

#include <dlfcn.h>

#include <initializer_list>
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

// The functions used, resolved by name from the loaded library. Those marked optional may be missing (a minimal
// or older NVML): what needs them says so, and the power limits work without them.
struct NvmlFunctions {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);  // optional: WordsOf has the API reference's words without it
  nvmlReturn_t (*device_get_count)(unsigned int*);
  nvmlReturn_t (*device_get_handle_by_index)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*device_get_handle_by_uuid)(const char*, nvmlDevice_t*);  // optional, with device_get_index
  nvmlReturn_t (*device_get_index)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*device_get_power_management_limit_constraints)(nvmlDevice_t, unsigned int*, unsigned int*);
  nvmlReturn_t (*device_get_power_management_default_limit)(nvmlDevice_t, unsigned int*);  // optional
  nvmlReturn_t (*device_get_power_management_limit)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*device_set_power_management_limit)(nvmlDevice_t, unsigned int);
  nvmlReturn_t (*device_get_power_usage)(nvmlDevice_t, unsigned int*);  // optional
  // The names the entry points with versions were found under (the _v2 ones, or NVML's first).
  const char* init_name = "nvmlInit_v2";
  const char* count_name = "nvmlDeviceGetCount_v2";
  const char* handle_name = "nvmlDeviceGetHandleByIndex_v2";
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

// NVML's words for `result`; from an NVML without nvmlErrorString, the words of NVML's API reference for the codes
// named above ("unknown error" for others).
std::string WordsOf(const NvmlFunctions& nvml, nvmlReturn_t result) {
  if (nvml.error_string != nullptr) {
    const char* words = nvml.error_string(result);
    return words ? words : "unknown error";
  }
  switch (result) {
    case kNvmlSuccess: return "Success";
    case kNvmlErrorInvalidArgument: return "Invalid Argument";
    case kNvmlErrorNotSupported: return "Not Supported";
    case kNvmlErrorNoPermission: return "Insufficient Permissions";
    case kNvmlErrorNotFound: return "Not Found";
    case kNvmlErrorDriverNotLoaded: return "Driver Not Loaded";
    case kNvmlErrorLibraryNotFound: return "NVML Shared Library Not Found";
    case kNvmlErrorGpuIsLost: return "GPU is lost";
    default: return "unknown error";
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
    if (nvmlReturn_t r = nvml_.device_get_count(&count); r != kNvmlSuccess) {
      return Error(absl::StrCat(nvml_.count_name, "()"), r);
    }
    if (count > static_cast<unsigned int>(std::numeric_limits<int>::max())) {
      return absl::InternalError(absl::StrCat(path_, ": ", nvml_.count_name, "() returned ", count, " GPUs"));
    }
    return static_cast<int>(count);
  }

  absl::StatusOr<int> IndexOfUuid(std::string_view uuid) override {
    const std::string name(uuid);
    if (nvml_.device_get_handle_by_uuid == nullptr || nvml_.device_get_index == nullptr) {
      return absl::UnimplementedError(absl::StrCat(path_, ": this NVML lacks nvmlDeviceGetHandleByUUID or ",
                                                   "nvmlDeviceGetIndex: GPU ", name, " cannot be found by UUID"));
    }
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
    if (nvml_.device_get_power_management_default_limit != nullptr) {
      nvmlReturn_t r = nvml_.device_get_power_management_default_limit(*device, &fallback);
      if (r != kNvmlSuccess) return Error(absl::StrCat("nvmlDeviceGetPowerManagementDefaultLimit(GPU ", index, ")"), r);
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
    if (nvml_.device_get_power_usage == nullptr) {
      return absl::UnimplementedError(absl::StrCat(path_, ": this NVML lacks nvmlDeviceGetPowerUsage"));
    }
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
    if (nvmlReturn_t r = nvml_.device_get_handle_by_index(static_cast<unsigned int>(index), &device);
        r != kNvmlSuccess) {
      return Error(absl::StrCat(nvml_.handle_name, "(GPU ", index, ")"), r);
    }
    return device;
  }

  // "<library>: <call>: <NVML's words> (NVML error <code>)".
  absl::Status Error(const std::string& call, nvmlReturn_t result) const {
    return absl::Status(CodeOf(result),
                        absl::StrCat(path_, ": ", call, ": ", WordsOf(nvml_, result), " (NVML error ", result, ")"));
  }

  void* handle_;
  std::string path_;
  NvmlFunctions nvml_;
};

// The first of `names` the library exports, or null.
template <typename Function>
Function* Find(void* handle, std::initializer_list<const char*> names, const char** found = nullptr) {
  for (const char* name : names) {
    if (void* symbol = dlsym(handle, name)) {
      if (found) *found = name;
      return reinterpret_cast<Function*>(symbol);
    }
  }
  return nullptr;
}

// A required function: the first of `names`, or the first name added to `missing`.
template <typename Function>
void Require(void* handle, std::initializer_list<const char*> names, Function*& function, std::string& missing,
             const char** found = nullptr) {
  function = Find<Function>(handle, names, found);
  if (function == nullptr) absl::StrAppend(&missing, missing.empty() ? "" : ", ", *names.begin());
}

// What the limits need is required; the versioned entry points are looked up under their _v2 names first, then
// under NVML's first ones (same arguments), which a minimal NVML may export alone.
absl::StatusOr<NvmlFunctions> ResolveAll(void* handle, const std::string& path) {
  NvmlFunctions f{};
  std::string missing;
  Require(handle, {"nvmlInit_v2", "nvmlInit"}, f.init, missing, &f.init_name);
  Require(handle, {"nvmlShutdown"}, f.shutdown, missing);
  Require(handle, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, f.device_get_count, missing, &f.count_name);
  Require(handle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, f.device_get_handle_by_index,
          missing, &f.handle_name);
  Require(handle, {"nvmlDeviceGetPowerManagementLimitConstraints"}, f.device_get_power_management_limit_constraints,
          missing);
  Require(handle, {"nvmlDeviceGetPowerManagementLimit"}, f.device_get_power_management_limit, missing);
  Require(handle, {"nvmlDeviceSetPowerManagementLimit"}, f.device_set_power_management_limit, missing);
  if (!missing.empty()) {
    return absl::UnavailableError(absl::StrCat(path, ": NVML library lacks ", missing));
  }
  f.error_string = Find<const char*(nvmlReturn_t)>(handle, {"nvmlErrorString"});
  f.device_get_handle_by_uuid = Find<nvmlReturn_t(const char*, nvmlDevice_t*)>(handle, {"nvmlDeviceGetHandleByUUID"});
  f.device_get_index = Find<nvmlReturn_t(nvmlDevice_t, unsigned int*)>(handle, {"nvmlDeviceGetIndex"});
  f.device_get_power_management_default_limit =
      Find<nvmlReturn_t(nvmlDevice_t, unsigned int*)>(handle, {"nvmlDeviceGetPowerManagementDefaultLimit"});
  f.device_get_power_usage = Find<nvmlReturn_t(nvmlDevice_t, unsigned int*)>(handle, {"nvmlDeviceGetPowerUsage"});
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
  if (nvmlReturn_t r = nvml->init(); r != kNvmlSuccess) {
    absl::Status error(CodeOf(r), absl::StrCat(library_path, ": ", nvml->init_name, "(): ", WordsOf(*nvml, r),
                                               " (NVML error ", r, ")"));
    dlclose(handle);
    return error;
  }
  return std::unique_ptr<GpuPowerControl>(new NvmlLibrary(handle, library_path, *nvml));
}

}  // namespace rackwise::node_power
