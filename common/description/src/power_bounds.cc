// The bounds on watts and caps; see power_bounds.h.
#include "rackwise/power_bounds.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace rackwise {

absl::Status CheckWattsPerGpu(double watts) {
  if (watts == 0) return absl::OkStatus();
  if (!std::isfinite(watts) || watts < kMinWattsPerGpu || watts > kMaxWattsPerGpu)
    return absl::InvalidArgumentError(absl::StrCat("watts per GPU must be a number of watts between ", kMinWattsPerGpu,
                                                   " and ", kMaxWattsPerGpu, " (or 0 for the node type's), got ",
                                                   watts));
  return absl::OkStatus();
}

absl::StatusOr<double> ParseWattsPerGpu(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  double watts = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, watts);
  // from_chars also reads "inf" and "nan"; out-of-range magnitudes ("1e999") come back as an error.
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(watts))
    return absl::InvalidArgumentError(absl::StrCat("'", std::string(text), "' is not a number of watts"));
  if (watts == 0 || !CheckWattsPerGpu(watts).ok())
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(text), " is outside ", kMinWattsPerGpu, "..", kMaxWattsPerGpu, " watts per GPU"));
  return watts;
}

namespace {

absl::Status CheckKw(double kilowatts, const char* what) {
  if (!std::isfinite(kilowatts) || kilowatts < 0 || kilowatts > kMaxCapKw)
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a number of kW between 0 and ",
                                                   static_cast<int64_t>(kMaxCapKw), ", got ", kilowatts));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCapKw(double kilowatts) { return CheckKw(kilowatts, "a power cap"); }

absl::Status CheckMeasuredKw(double kilowatts) { return CheckKw(kilowatts, "a measured draw"); }

absl::Status CheckReclaimPct(double pct) {
  if (!std::isfinite(pct) || pct < 0 || pct > kMaxReclaimPct)
    return absl::InvalidArgumentError(absl::StrCat("must be between 0 and ", kMaxReclaimPct, ", got ", pct));
  return absl::OkStatus();
}

double IdleShareWattsPerGpu(int gpus, double idle_watts, double node_watts, double gpu_watts) {
  if (gpus < 1 || !(node_watts > 0)) return kMinWattsPerGpu;
  const double default_per_gpu = (node_watts - idle_watts) / gpus;
  const double gpu_part = gpu_watts > 0 ? std::min(gpu_watts / node_watts, 1.0 / gpus) : default_per_gpu / node_watts;
  return std::max(kMinWattsPerGpu, std::min(idle_watts * gpu_part, default_per_gpu));
}

}  // namespace rackwise
