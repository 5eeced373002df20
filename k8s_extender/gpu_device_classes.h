// Which DRA device classes hand out whole GPUs. Configured by name (default: the NVIDIA DRA driver's
// `gpu.nvidia.com`); a DeviceClass the API server serves with `spec.extendedResourceName: nvidia.com/gpu`
// is one too, since the scheduler satisfies `nvidia.com/gpu` requests from it. Not thread-safe (the extender
// keeps it under its service lock).
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "json_fields.h"

namespace rackwise::k8s {

inline constexpr char kNvidiaGpuDeviceClass[] = "gpu.nvidia.com";

class GpuDeviceClasses {
 public:
  explicit GpuDeviceClasses(std::vector<std::string> configured = {kNvidiaGpuDeviceClass});

  bool IsGpu(absl::string_view device_class) const;
  // A DeviceClass object from a list or a watch event; `deleted` for a DELETED event.
  void ApplyDeviceClass(const Json& device_class, bool deleted);
  // A (re)list of DeviceClasses: replaces every class learnt from objects.
  void ReplaceDeviceClasses(const std::vector<Json>& items);

  const absl::flat_hash_set<std::string>& configured() const { return configured_; }

 private:
  absl::flat_hash_set<std::string> configured_;
  absl::flat_hash_map<std::string, bool> extended_;  // DeviceClass name -> backs nvidia.com/gpu
};

}  // namespace rackwise::k8s
