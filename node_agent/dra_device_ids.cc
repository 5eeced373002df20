// See dra_device_ids.h.
#include "dra_device_ids.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "kube_client.h"

namespace rackwise::node_agent {

std::string DraGpuDeviceId(absl::string_view device_name) {
  absl::string_view rest = device_name;
  if (!absl::ConsumePrefix(&rest, "gpu-")) return "";
  const size_t dash = rest.find('-');
  int index = 0;
  if (!absl::SimpleAtoi(rest.substr(0, dash), &index) || index < 0) return "";
  if (dash == absl::string_view::npos) return std::to_string(index);
  return absl::StartsWith(rest.substr(dash), "-mig-") ? absl::StrCat("MIG-dra-", device_name) : "";
}

absl::StatusOr<std::string> ResolveDraGpu(const k8s::DeviceDirectory* slices, const std::string& driver,
                                          const std::string& pool, const std::string& device) {
  if (const k8s::SliceDevice* d = slices != nullptr ? slices->Find(driver, pool, device) : nullptr) {
    if (d->partition) return absl::StrCat("MIG-dra-", device);
    if (!d->uuid.empty()) return d->uuid;
    if (d->gpu_index >= 0) return std::to_string(d->gpu_index);
  }
  std::string by_name = DraGpuDeviceId(device);
  if (!by_name.empty()) return by_name;
  return absl::InvalidArgumentError(absl::StrCat(
      "DRA device \"", device, "\" of driver ", driver, " (pool \"", pool, "\"): no ResourceSlice of this node read ",
      "gives its uuid or index attribute, and its name is not NVIDIA's gpu-<index>; which board it is is unknown"));
}

absl::StatusOr<k8s::DeviceDirectory> ListNodeSlices(k8s::KubeClient* client, const std::string& node) {
  k8s::DeviceDirectory directory;
  std::vector<k8s::Json> items;
  std::string continue_token;
  const std::string selector = absl::StrCat("spec.nodeName=", node);
  for (int page = 0; page < 1'000; ++page) {
    absl::StatusOr<k8s::ListPage> p =
        client->List("/apis/resource.k8s.io/v1/resourceslices", selector, 500, continue_token);
    if (absl::IsNotFound(p.status())) return directory;  // DRA is off: no slices
    if (!p.ok()) return p.status();
    for (k8s::Json& item : p->items) items.push_back(std::move(item));
    continue_token = p->continue_token;
    if (continue_token.empty()) {
      directory.ReplaceSlices(items);
      return directory;
    }
  }
  return absl::InternalError("LIST resourceslices: more than 1,000 pages");
}

}  // namespace rackwise::node_agent
