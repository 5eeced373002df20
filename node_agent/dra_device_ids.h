// Which board a GPU is that a pod got through DRA (resource.k8s.io), as a device id of gpu_device_id.h. The
// kubelet's PodResources answer names a DRA device only by driver, pool and device name; the board behind the
// name is in the ResourceSlice the driver published for this node, whose device attributes carry its `uuid`
// (NVML finds the board by it) and `index`, the same attributes the extender books the GPU by
// (dra_device_directory.h). So the slice decides; NVIDIA's device naming ("gpu-<index>", a MIG slice
// "gpu-<index>-mig-...") is only the fallback for a device no slice read lists (the agent lacks the right to
// list ResourceSlices, or the slice is not published yet). A device neither names is an error that names it:
// the pod is refused and reported (log and the unenforced gauge), never limited on a guessed board.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dra_device_directory.h"

namespace rackwise::k8s {
class KubeClient;
}

namespace rackwise::node_agent {

// NVIDIA's naming: "gpu-3" is "3"; a MIG slice is "MIG-dra-<name>" (refused later, as a power limit applies to a
// whole board). "" when the name is neither.
std::string DraGpuDeviceId(absl::string_view device_name);

// The device id of (driver, pool, device): its slice's uuid, else its slice's index, a MIG slice (attribute
// parentIndex) "MIG-dra-<device>"; without a slice entry (or `slices` null), DraGpuDeviceId of the name.
// InvalidArgument naming the driver, pool and device when none of these says which board it is.
absl::StatusOr<std::string> ResolveDraGpu(const k8s::DeviceDirectory* slices, const std::string& driver,
                                          const std::string& pool, const std::string& device);

// This node's ResourceSlices (fieldSelector spec.nodeName=<node>). An API the server does not serve (404: DRA
// is off) is an empty directory; other errors are the client's (PermissionDenied naming the missing right, ...).
absl::StatusOr<k8s::DeviceDirectory> ListNodeSlices(k8s::KubeClient* client, const std::string& node);

}  // namespace rackwise::node_agent
