// See dra_claim_spec.h.
#include "dra_claim_spec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "pod_spec.h"

namespace rackwise::k8s {
namespace {

// Counts above this are refused as malformed (no node holds that many devices of one class).
constexpr int64_t kMaxDeviceCount = 4096;

// One alternative: an ExactDeviceRequest (v1 `exactly`), a DeviceSubRequest, or a v1beta1 request's flat fields.
absl::StatusOr<DeviceAlternative> ParseAlternative(const Json& request, const std::string& where) {
  DeviceAlternative alt;
  alt.name = StringField(request, "name");
  alt.device_class = StringField(request, "deviceClassName");
  const std::string mode = StringField(request, "allocationMode");
  if (mode == "All") {
    alt.all = true;
  } else if (!mode.empty() && mode != "ExactCount") {
    return absl::InvalidArgumentError(absl::StrCat(where, ".allocationMode: \"", mode, "\" is not ExactCount or All"));
  }
  if (const Json* count = FindField(request, "count"); count != nullptr && !alt.all) {
    absl::StatusOr<int64_t> n = ParseWholeQuantity(*count);
    if (!n.ok() || *n < 1 || *n > kMaxDeviceCount) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".count: expected a whole number in 1..", kMaxDeviceCount));
    }
    alt.count = static_cast<int>(*n);
  }
  if (const Json* admin = FindField(request, "adminAccess"); admin != nullptr && admin->is_boolean()) {
    alt.admin_access = admin->get<bool>();
  }
  return alt;
}

absl::StatusOr<DeviceRequestSpec> ParseRequest(const Json& request, const std::string& where) {
  if (!request.is_object()) return absl::InvalidArgumentError(absl::StrCat(where, ": expected an object"));
  DeviceRequestSpec out;
  out.name = StringField(request, "name");
  if (const Json* first = FindField(request, "firstAvailable")) {
    if (!first->is_array())
      return absl::InvalidArgumentError(absl::StrCat(where, ".firstAvailable: expected an array"));
    for (size_t i = 0; i < first->size(); ++i) {
      absl::StatusOr<DeviceAlternative> alt =
          ParseAlternative((*first)[i], absl::StrCat(where, ".firstAvailable[", i, "]"));
      if (!alt.ok()) return alt.status();
      out.alternatives.push_back(std::move(*alt));
    }
    return out;
  }
  // v1: the request's fields are under `exactly`; v1beta1 kept them on the request itself.
  const Json* exactly = FindField(request, "exactly");
  absl::StatusOr<DeviceAlternative> alt =
      ParseAlternative(exactly != nullptr ? *exactly : request, exactly != nullptr ? where + ".exactly" : where);
  if (!alt.ok()) return alt.status();
  alt->name.clear();
  out.alternatives.push_back(std::move(*alt));
  return out;
}

int AlternativeGpus(const DeviceAlternative& alt, const GpuDeviceClasses& classes, int largest_node_gpus) {
  if (alt.admin_access || !classes.IsGpu(alt.device_class)) return 0;
  return alt.all ? largest_node_gpus : alt.count;
}

}  // namespace

absl::StatusOr<ClaimSpec> ClaimSpec::Parse(const Json& spec, absl::string_view where) {
  ClaimSpec out;
  const Json* requests = FindPath(spec, {"devices", "requests"});
  if (requests == nullptr) return out;
  if (!requests->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ".devices.requests: expected an array"));
  }
  for (size_t i = 0; i < requests->size(); ++i) {
    absl::StatusOr<DeviceRequestSpec> r =
        ParseRequest((*requests)[i], absl::StrCat(where, ".devices.requests[", i, "]"));
    if (!r.ok()) return r.status();
    out.requests_.push_back(std::move(*r));
  }
  return out;
}

int ClaimSpec::Gpus(const GpuDeviceClasses& classes, int largest_node_gpus) const {
  int total = 0;
  for (const DeviceRequestSpec& r : requests_) {
    int largest = 0;
    for (const DeviceAlternative& alt : r.alternatives) {
      largest = std::max(largest, AlternativeGpus(alt, classes, largest_node_gpus));
    }
    total += largest;
  }
  return total;
}

bool ClaimSpec::IsGpuResult(const std::string& request, const GpuDeviceClasses& classes) const {
  const size_t slash = request.find('/');
  const absl::string_view main = absl::string_view(request).substr(0, slash);
  const absl::string_view sub =
      slash == std::string::npos ? absl::string_view() : absl::string_view(request).substr(slash + 1);
  for (const DeviceRequestSpec& r : requests_) {
    if (r.name != main) continue;
    for (const DeviceAlternative& alt : r.alternatives) {
      if (alt.name == sub) return !alt.admin_access && classes.IsGpu(alt.device_class);
    }
  }
  return false;
}

bool ClaimSpec::UsesClass(absl::string_view device_class) const {
  for (const DeviceRequestSpec& r : requests_) {
    for (const DeviceAlternative& alt : r.alternatives) {
      if (alt.device_class == device_class) return true;
    }
  }
  return false;
}

}  // namespace rackwise::k8s
