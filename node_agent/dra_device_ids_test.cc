// Which board a DRA GPU is: the node's ResourceSlice decides (uuid, else index), whatever the device is called;
// NVIDIA's gpu-<index> naming is only the fallback; a device neither names gets a clear error, and the pod is
// refused with it instead of being limited on a guessed board.
#include "dra_device_ids.h"

#include <gtest/gtest.h>

#include "limit_plan.h"

namespace rackwise::node_agent {
namespace {

// A ResourceSlice of node-1 as a driver publishes it, its devices named without any index in the name.
k8s::Json Slice() {
  auto gpu = [](const std::string& name, int index, const std::string& uuid) {
    return k8s::Json{{"name", name},
                     {"attributes", {{"index", {{"int", index}}}, {"gpu.nvidia.com/uuid", {{"string", uuid}}}}}};
  };
  k8s::Json devices = k8s::Json::array();
  devices.push_back(gpu("gpu-3", 5, "GPU-aaaa"));  // a name that says 3 for the board NVML numbers 5
  devices.push_back(gpu("h100-b", 1, ""));         // no uuid: its index
  devices.push_back({{"name", "h100-b-mig-0"}, {"attributes", {{"parentIndex", {{"int", 1}}}}}});
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", "node-1-gpu.nvidia.com-x7k2p"}}},
          {"spec",
           {{"driver", "gpu.nvidia.com"},
            {"nodeName", "node-1"},
            {"pool", {{"name", "node-1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", devices}}}};
}

TEST(DraDeviceIds, TheSliceSaysWhichBoardWhateverTheName) {
  k8s::DeviceDirectory slices;
  slices.ReplaceSlices({Slice()});
  EXPECT_EQ(*ResolveDraGpu(&slices, "gpu.nvidia.com", "node-1", "gpu-3"), "GPU-aaaa");
  EXPECT_EQ(*ResolveDraGpu(&slices, "gpu.nvidia.com", "node-1", "h100-b"), "1");
  EXPECT_EQ(*ResolveDraGpu(&slices, "gpu.nvidia.com", "node-1", "h100-b-mig-0"), "MIG-dra-h100-b-mig-0");
  // Not in any slice read: NVIDIA's naming, then an error naming the device.
  EXPECT_EQ(*ResolveDraGpu(&slices, "gpu.nvidia.com", "node-1", "gpu-7"), "7");
  EXPECT_EQ(*ResolveDraGpu(nullptr, "gpu.nvidia.com", "node-1", "gpu-2-mig-1g.10gb-0-0"),
            "MIG-dra-gpu-2-mig-1g.10gb-0-0");
  absl::StatusOr<std::string> unknown = ResolveDraGpu(nullptr, "gpu.nvidia.com", "node-1", "h100-b");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "DRA device \"h100-b\" of driver gpu.nvidia.com (pool \"node-1\"): no ResourceSlice of this node read "
            "gives its uuid or index attribute, and its name is not NVIDIA's gpu-<index>; which board it is is "
            "unknown");
  EXPECT_EQ(DraGpuDeviceId("gpu-12"), "12");
  EXPECT_EQ(DraGpuDeviceId("channel-0"), "");
  EXPECT_EQ(DraGpuDeviceId("gpu-x"), "");
}

// A pod with a device whose board is unknown is refused with the device named, never limited.
TEST(DraDeviceIds, APodWithAnUnknownBoardIsRefusedByName) {
  NodeGpus gpus;
  gpus.count = 4;
  for (int i = 0; i < 4; ++i) gpus.ranges[i] = {100'000, 700'000};
  PodDevices devices{"ml", "a", {"0"}, "DRA device \"h100-b\" ...: which board it is is unknown"};
  LimitPlan plan = PlanLimits({{"ml", "a", "u1", 450'000, ""}}, {devices}, {}, gpus);
  ASSERT_EQ(plan.refused.size(), 1u);
  EXPECT_EQ(plan.refused[0].reason, devices.error);
  EXPECT_TRUE(plan.apply.empty());
}

}  // namespace
}  // namespace rackwise::node_agent
