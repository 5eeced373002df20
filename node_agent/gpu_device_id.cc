#include "gpu_device_id.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rackwise::node_agent {

absl::StatusOr<GpuDeviceRef> ParseGpuDeviceId(absl::string_view id) {
  absl::string_view base = id;
  if (size_t replica = base.find("::"); replica != absl::string_view::npos) base = base.substr(0, replica);
  GpuDeviceRef ref;
  if (absl::StartsWith(base, "MIG-")) {
    return absl::InvalidArgumentError(
        absl::StrCat("device id \"", id, "\" is a MIG slice; power limits apply to whole GPUs"));
  }
  if (absl::StartsWith(base, "GPU-") && base.size() > 4) {
    for (char c : base.substr(4)) {
      if (!absl::ascii_isxdigit(static_cast<unsigned char>(c)) && c != '-') {
        return absl::InvalidArgumentError(absl::StrCat("device id \"", id, "\" is not a GPU UUID"));
      }
    }
    ref.uuid = std::string(base);
    return ref;
  }
  int index = -1;
  bool digits = !base.empty() && base.size() <= 4;
  for (char c : base) digits = digits && absl::ascii_isdigit(static_cast<unsigned char>(c));
  if (!digits || !absl::SimpleAtoi(base, &index) || index > kMaxGpuIndex) {
    return absl::InvalidArgumentError(
        absl::StrCat("device id \"", id, "\" is neither a GPU UUID (GPU-...) nor an index in 0..", kMaxGpuIndex));
  }
  ref.index = index;
  return ref;
}

}  // namespace rackwise::node_agent
