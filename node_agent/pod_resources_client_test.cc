#include "pod_resources_client.h"

#include <gtest/gtest.h>

#include "podresources/v1/api.pb.h"

namespace rackwise::node_agent {
namespace {

// A hand-rolled protobuf encoder, independent of the generated code: the field numbers below are upstream's
// (k8s.io/kubelet/pkg/apis/podresources/v1/api.proto), so the test fails if api.proto ever drifts from them.
std::string Varint(uint64_t v) {
  std::string out;
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    out.push_back(static_cast<char>(v ? byte | 0x80 : byte));
  } while (v);
  return out;
}
std::string Bytes(int field, const std::string& payload) {
  return Varint(static_cast<uint64_t>(field) << 3 | 2) + Varint(payload.size()) + payload;
}
std::string Number(int field, uint64_t value) { return Varint(static_cast<uint64_t>(field) << 3) + Varint(value); }

TEST(DevicesByPod, DecodesUpstreamWireBytesAndSkipsFieldsItDoesNotDeclare) {
  // ContainerDevices{resource_name=1, device_ids=2, topology=3{nodes=1{ID=1}}}
  std::string gpus =
      Bytes(1, "nvidia.com/gpu") + Bytes(2, "GPU-0001") + Bytes(2, "GPU-0002") + Bytes(3, Bytes(1, Number(1, 1)));
  // ContainerResources{name=1, devices=2, cpu_ids=3 (packed), memory=4 (newer kubelets), dynamic_resources=5}
  std::string container = Bytes(1, "main") + Bytes(2, gpus) + Bytes(3, Varint(2) + Varint(3)) +
                          Bytes(4, Bytes(1, "memory") + Number(2, 1 << 30)) + Bytes(5, Bytes(2, "claim"));
  // PodResources{name=1, namespace=2, containers=3}; ListPodResourcesResponse{pod_resources=1}
  std::string wire = Bytes(1, Bytes(1, "train") + Bytes(2, "ml") + Bytes(3, container));
  ::v1::ListPodResourcesResponse response;
  ASSERT_TRUE(response.ParseFromString(wire));
  std::vector<PodDevices> devices = DevicesByPod(response, "nvidia.com/gpu");
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].Key(), "ml/train");
  EXPECT_EQ(devices[0].device_ids, (std::vector<std::string>{"GPU-0001", "GPU-0002"}));
  EXPECT_EQ(response.pod_resources(0).containers(0).cpu_ids_size(), 2);
}

// GPUs from DRA claims, in upstream's wire bytes: DynamicResource{claim_name=2, claim_namespace=3,
// claim_resources=4{cdi_devices=1{name=1}, driver_name=2, pool_name=3, device_name=4}}.
TEST(DevicesByPod, ReadsGpusFromDynamicResources) {
  auto device = [](const std::string& driver, const std::string& name) {
    return Bytes(4, Bytes(1, Bytes(1, "k8s." + driver + "/claim=uid-" + name)) + Bytes(2, driver) + Bytes(3, "node-1") +
                        Bytes(4, name));
  };
  const std::string claim = Bytes(2, "train-gpus-x7k") + Bytes(3, "ml") + device("gpu.nvidia.com", "gpu-3") +
                            device("gpu.nvidia.com", "gpu-5") + device("rdma.example.com", "gpu-1");
  const std::string mig = Bytes(2, "slice") + Bytes(3, "ml") + device("gpu.nvidia.com", "gpu-6-mig-1g.10gb-0-0");
  // Two containers name the same claim: its GPUs count once.
  const std::string wire = Bytes(1, Bytes(1, "train") + Bytes(2, "ml") + Bytes(3, Bytes(1, "a") + Bytes(5, claim)) +
                                        Bytes(3, Bytes(1, "b") + Bytes(5, claim) + Bytes(5, mig)));
  ::v1::ListPodResourcesResponse response;
  ASSERT_TRUE(response.ParseFromString(wire));
  std::vector<PodDevices> devices = DevicesByPod(response, "nvidia.com/gpu");
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].device_ids, (std::vector<std::string>{"3", "5", "MIG-dra-gpu-6-mig-1g.10gb-0-0"}));
}

TEST(PodResourcesLister, MethodNameOnTheWire) {
  // gRPC routes by this path; the kubelet serves exactly /v1.PodResourcesLister/List.
  EXPECT_EQ(std::string(::v1::ListPodResourcesResponse::descriptor()->file()->package()), "v1");
  EXPECT_EQ(::v1::ListPodResourcesResponse::descriptor()->file()->service(0)->full_name(), "v1.PodResourcesLister");
  EXPECT_EQ(::v1::ListPodResourcesResponse::descriptor()->file()->service(0)->method(0)->name(), "List");
}

TEST(DevicesByPod, GathersOneResourceOverContainers) {
  ::v1::ListPodResourcesResponse response;
  ::v1::PodResources* pod = response.add_pod_resources();
  pod->set_name("a");
  pod->set_namespace_("ml");
  for (const char* id : {"GPU-0001", "GPU-0002"}) {
    ::v1::ContainerDevices* d = pod->add_containers()->add_devices();
    d->set_resource_name("nvidia.com/gpu");
    d->add_device_ids(id);
  }
  ::v1::ContainerDevices* nic = pod->mutable_containers(0)->add_devices();
  nic->set_resource_name("rdma/hca");
  nic->add_device_ids("mlx5_0");
  ::v1::PodResources* cpu_only = response.add_pod_resources();
  cpu_only->set_name("b");
  cpu_only->add_containers()->add_cpu_ids(3);

  std::vector<PodDevices> devices = DevicesByPod(response, "nvidia.com/gpu");
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].Key(), "ml/a");
  EXPECT_EQ(devices[0].device_ids, (std::vector<std::string>{"GPU-0001", "GPU-0002"}));
}

TEST(PodResourcesClient, RefusesNonUnixEndpointsAndReportsAMissingSocket) {
  EXPECT_FALSE(PodResourcesClient::Create("localhost:10250").ok());
  auto client = PodResourcesClient::Create("unix:///nonexistent/kubelet.sock");
  ASSERT_TRUE(client.ok());
  auto listed = (*client)->ListDevices("nvidia.com/gpu", 500);
  EXPECT_FALSE(listed.ok());
  EXPECT_NE(listed.status().message().find("/nonexistent/kubelet.sock"), std::string::npos) << listed.status();
}

}  // namespace
}  // namespace rackwise::node_agent
