// A local kubelet for tests of rackwise-node-agent: a gRPC server implementing v1.PodResourcesLister/List on a
// unix socket, from the same protocol file the agent is built with, answering whatever the test set last.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "podresources/v1/api.grpc.pb.h"

namespace rackwise::node_agent {

class FakeKubelet final : public ::v1::PodResourcesLister::Service {
 public:
  explicit FakeKubelet(const std::string& socket) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeKubelet() override { server_->Shutdown(); }
  bool ok() const { return server_ != nullptr; }

  // Pods as {namespace/name -> device ids}; each pod gets one container holding the GPUs and a NIC. An id
  // "dra:<device>" is a GPU of NVIDIA's DRA driver (gpu.nvidia.com, pool gpu001) in the container's claim.
  void SetPods(const std::map<std::string, std::vector<std::string>>& pods) {
    std::lock_guard<std::mutex> lock(mu_);
    response_.Clear();
    for (const auto& [key, ids] : pods) {
      std::vector<std::string> parts = absl::StrSplit(key, '/');
      ::v1::PodResources* pod = response_.add_pod_resources();
      pod->set_namespace_(parts[0]);
      pod->set_name(parts[1]);
      ::v1::ContainerResources* container = pod->add_containers();
      container->set_name("main");
      ::v1::ContainerDevices* gpus = container->add_devices();
      gpus->set_resource_name("nvidia.com/gpu");
      ::v1::DynamicResource* claim = nullptr;
      for (const std::string& id : ids) {
        if (!absl::StartsWith(id, "dra:")) {
          gpus->add_device_ids(id);
          continue;
        }
        if (claim == nullptr) {
          claim = container->add_dynamic_resources();
          claim->set_claim_name(parts[1] + "-gpus");
          claim->set_claim_namespace(parts[0]);
        }
        ::v1::ClaimResource* device = claim->add_claim_resources();
        device->set_driver_name("gpu.nvidia.com");
        device->set_pool_name("gpu001");
        device->set_device_name(id.substr(4));
        device->add_cdi_devices()->set_name("k8s.gpu.nvidia.com/claim=" + parts[1] + "-" + id.substr(4));
      }
      ::v1::ContainerDevices* nic = container->add_devices();
      nic->set_resource_name("rdma/hca_shared_devices_a");
      nic->add_device_ids("0");
    }
  }
  int lists() {
    std::lock_guard<std::mutex> lock(mu_);
    return lists_;
  }

  grpc::Status List(grpc::ServerContext*, const ::v1::ListPodResourcesRequest*,
                    ::v1::ListPodResourcesResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++lists_;
    *response = response_;
    return grpc::Status::OK;
  }

 private:
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  ::v1::ListPodResourcesResponse response_;
  int lists_ = 0;
};

}  // namespace rackwise::node_agent
