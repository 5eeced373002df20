// See gpu_device_classes.h.
#include "gpu_device_classes.h"

#include "pod_spec.h"

namespace rackwise::k8s {

GpuDeviceClasses::GpuDeviceClasses(std::vector<std::string> configured)
    : configured_(configured.begin(), configured.end()) {}

bool GpuDeviceClasses::IsGpu(absl::string_view device_class) const {
  if (configured_.contains(device_class)) return true;
  auto it = extended_.find(device_class);
  return it != extended_.end() && it->second;
}

void GpuDeviceClasses::ApplyDeviceClass(const Json& device_class, bool deleted) {
  const Json* meta = FindField(device_class, "metadata");
  const std::string name = meta != nullptr ? StringField(*meta, "name") : "";
  if (name.empty()) return;
  if (deleted) {
    extended_.erase(name);
    return;
  }
  const Json* spec = FindField(device_class, "spec");
  extended_[name] = spec != nullptr && StringField(*spec, "extendedResourceName") == kGpuResource;
}

void GpuDeviceClasses::ReplaceDeviceClasses(const std::vector<Json>& items) {
  extended_.clear();
  for (const Json& item : items) ApplyDeviceClass(item, false);
}

}  // namespace rackwise::k8s
