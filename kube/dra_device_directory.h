// Where a DRA device is: from ResourceSlices, (driver, pool, device) -> the node it is on and, for a GPU, its
// index on that node (attribute `index`, or `parentIndex` for a MIG slice, whose power is its board's) and
// UUID (`uuid`). Attribute names may be qualified by the driver's domain ("gpu.nvidia.com/index"); both forms
// are read. Not thread-safe (kept under the extender's service lock).
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "json_fields.h"

namespace rackwise::k8s {

struct SliceDevice {
  std::string slice;       // the ResourceSlice that published it
  std::string node;        // spec.nodeName (or the device's own nodeName); "" when published for many nodes
  int gpu_index = -1;      // -1: no index attribute
  bool partition = false;  // a MIG slice (attribute parentIndex): gpu_index is its board's
  std::string uuid;
};

class DeviceDirectory {
 public:
  // A ResourceSlice from a list or a watch event; `deleted` for a DELETED event.
  void ApplySlice(const Json& slice, bool deleted);
  void ReplaceSlices(const std::vector<Json>& items);
  // nullptr when no slice seen publishes that device.
  const SliceDevice* Find(const std::string& driver, const std::string& pool, const std::string& device) const;
  size_t size() const { return devices_.size(); }

 private:
  static std::string DeviceKey(absl::string_view driver, absl::string_view pool, absl::string_view device);
  void ForgetSlice(const std::string& slice);

  absl::flat_hash_map<std::string, SliceDevice> devices_;              // by DeviceKey
  absl::flat_hash_map<std::string, std::vector<std::string>> slices_;  // slice name -> its device keys
};

}  // namespace rackwise::k8s
