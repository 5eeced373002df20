// A client of the kubelet's PodResources API (v1.PodResourcesLister) over its unix socket, and the reading of
// its answer into the GPUs each pod holds. The kubelet serves plain gRPC on a root-owned socket; access is
// controlled by who can open the socket, so no credentials are sent.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dra_device_ids.h"
#include "limit_plan.h"

namespace v1 {
class ListPodResourcesResponse;
}

namespace rackwise::node_agent {

inline constexpr char kDefaultPodResourcesEndpoint[] = "unix:///var/lib/kubelet/pod-resources/kubelet.sock";
inline constexpr char kNvidiaGpuResource[] = "nvidia.com/gpu";
inline constexpr char kNvidiaDraGpuDriver[] = "gpu.nvidia.com";

// The devices of `resource_name` per pod, over all its containers, and the GPUs its containers got through DRA
// from `dra_driver` (a claim two containers share counts once), each named by ResolveDraGpu against `slices`
// (this node's ResourceSlices; null: by NVIDIA's device names alone). A device whose board is unknown sets the
// pod's error. Pods without any are left out.
std::vector<PodDevices> DevicesByPod(const ::v1::ListPodResourcesResponse& response, absl::string_view resource_name,
                                     absl::string_view dra_driver = kNvidiaDraGpuDriver,
                                     const k8s::DeviceDirectory* slices = nullptr);

class PodResourcesClient {
 public:
  // `endpoint` is a gRPC target ("unix:///path" or "unix:/path"). Connects lazily: a missing socket is an
  // error of List, not of Create, so the agent starts before the kubelet and retries.
  static absl::StatusOr<std::unique_ptr<PodResourcesClient>> Create(const std::string& endpoint);
  ~PodResourcesClient();

  // One List call with a deadline; Unavailable (naming the endpoint) when the kubelet does not answer.
  absl::StatusOr<std::vector<PodDevices>> ListDevices(absl::string_view resource_name, int timeout_ms = 10'000,
                                                      absl::string_view dra_driver = kNvidiaDraGpuDriver,
                                                      const k8s::DeviceDirectory* slices = nullptr);

 private:
  struct Stub;
  PodResourcesClient(std::string endpoint, std::unique_ptr<Stub> stub);
  std::string endpoint_;
  std::unique_ptr<Stub> stub_;
};

}  // namespace rackwise::node_agent
