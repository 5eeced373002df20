#include "pod_resources_client.h"

#include <gtest/gtest.h>

#include "podresources/v1/api.pb.h"

namespace rackwise::node_agent {
namespace {

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
