#include "pod_resources_client.h"

#include <chrono>
#include <set>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "podresources/v1/api.grpc.pb.h"

namespace rackwise::node_agent {

struct PodResourcesClient::Stub {
  std::unique_ptr<::v1::PodResourcesLister::Stub> lister;
};

std::vector<PodDevices> DevicesByPod(const ::v1::ListPodResourcesResponse& response, absl::string_view resource_name,
                                     absl::string_view dra_driver, const k8s::DeviceDirectory* slices) {
  std::vector<PodDevices> out;
  for (const ::v1::PodResources& pod : response.pod_resources()) {
    PodDevices devices{pod.namespace_(), pod.name(), {}};
    std::set<std::string> dra_seen;  // pool/device: a claim several containers share lists its devices in each
    for (const ::v1::ContainerResources& container : pod.containers()) {
      for (const ::v1::ContainerDevices& d : container.devices()) {
        if (d.resource_name() != resource_name) continue;
        devices.device_ids.insert(devices.device_ids.end(), d.device_ids().begin(), d.device_ids().end());
      }
      for (const ::v1::DynamicResource& claim : container.dynamic_resources()) {
        for (const ::v1::ClaimResource& r : claim.claim_resources()) {
          if (r.driver_name() != dra_driver || !dra_seen.insert(r.pool_name() + "/" + r.device_name()).second) continue;
          absl::StatusOr<std::string> id = ResolveDraGpu(slices, r.driver_name(), r.pool_name(), r.device_name());
          if (id.ok()) {
            devices.device_ids.push_back(std::move(*id));
          } else if (devices.error.empty()) {
            devices.error = std::string(id.status().message());
          }
        }
      }
    }
    if (!devices.device_ids.empty() || !devices.error.empty()) out.push_back(std::move(devices));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<PodResourcesClient>> PodResourcesClient::Create(const std::string& endpoint) {
  if (!absl::StartsWith(endpoint, "unix:")) {
    return absl::InvalidArgumentError(
        absl::StrCat("PodResources endpoint \"", endpoint, "\": expected unix:///path/to/kubelet.sock"));
  }
  grpc::ChannelArguments args;
  // A node with many pods answers more than gRPC's default 4 MiB; upstream's own client accepts 16 MiB.
  args.SetMaxReceiveMessageSize(16 << 20);
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
  auto stub = std::make_unique<Stub>();
  stub->lister = ::v1::PodResourcesLister::NewStub(channel);
  return std::unique_ptr<PodResourcesClient>(new PodResourcesClient(endpoint, std::move(stub)));
}

PodResourcesClient::PodResourcesClient(std::string endpoint, std::unique_ptr<Stub> stub)
    : endpoint_(std::move(endpoint)), stub_(std::move(stub)) {}

PodResourcesClient::~PodResourcesClient() = default;

absl::StatusOr<std::vector<PodDevices>> PodResourcesClient::ListDevices(absl::string_view resource_name, int timeout_ms,
                                                                        absl::string_view dra_driver,
                                                                        const k8s::DeviceDirectory* slices) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  ::v1::ListPodResourcesRequest request;
  ::v1::ListPodResourcesResponse response;
  grpc::Status status = stub_->lister->List(&context, request, &response);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat("PodResources List on ", endpoint_, ": ", status.error_message(),
                                               " (gRPC code ", static_cast<int>(status.error_code()), ")"));
  }
  return DevicesByPod(response, resource_name, dra_driver, slices);
}

}  // namespace rackwise::node_agent
