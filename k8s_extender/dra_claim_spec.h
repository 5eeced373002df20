// What a ResourceClaimSpec (resource.k8s.io/v1; v1beta1's flat request fields are read too) asks for, reduced
// to what rackwise counts: per device request, the alternatives it may be satisfied by (one for an `exactly`
// request, several for `firstAvailable`), each with its device class, allocation mode and count. The GPUs a
// spec asks are counted at their largest, because the filter must hold room for whichever alternative the
// scheduler's allocator picks: the largest alternative of a GPU class, `All` as the largest node's GPUs, CEL
// selectors ignored (they narrow which devices, not how many). `adminAccess` requests are not counted: they
// grant monitoring access to devices already in use, never the devices themselves.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpu_device_classes.h"
#include "json_fields.h"

namespace rackwise::k8s {

// One way a device request can be met.
struct DeviceAlternative {
  std::string name;           // the subrequest's name ("" for an `exactly` request)
  std::string device_class;   // deviceClassName
  bool all = false;           // allocationMode: All (every matching device on the node)
  int count = 1;              // allocationMode: ExactCount (the default), count (default 1)
  bool admin_access = false;  // adminAccess: true
};

struct DeviceRequestSpec {
  std::string name;
  std::vector<DeviceAlternative> alternatives;  // `exactly` gives one, `firstAvailable` one or more
};

class ClaimSpec {
 public:
  // Reads a ResourceClaimSpec (claim.spec, or template.spec.spec). `where` prefixes error messages.
  static absl::StatusOr<ClaimSpec> Parse(const Json& spec, absl::string_view where);

  // GPUs the spec asks for at their largest: summed over requests, each the largest of its GPU-class
  // alternatives; `All` counts as `largest_node_gpus`.
  int Gpus(const GpuDeviceClasses& classes, int largest_node_gpus) const;
  // Whether the allocation result for `request` ("main" or "main/sub", as results name it) is of a GPU class.
  bool IsGpuResult(const std::string& request, const GpuDeviceClasses& classes) const;
  // Whether any request is of `device_class`.
  bool UsesClass(absl::string_view device_class) const;

  const std::vector<DeviceRequestSpec>& requests() const { return requests_; }

 private:
  std::vector<DeviceRequestSpec> requests_;
};

}  // namespace rackwise::k8s
