// SPDX-License-Identifier: GPL-2.0-or-later
// Parsing of the per-job rackwise options shared by the SPANK plugin and the select plugin.
#include "job_options.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace rackwise::slurm {
namespace {

// Debian's absl has its own string_view type, so the helpers here stay on std::string_view.
std::string_view Trim(std::string_view v) {
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  return v;
}

std::string Lower(std::string_view v) {
  std::string out(v);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

absl::StatusOr<Locality> ParseNvlink(std::string_view value) {
  const std::string v = Lower(Trim(value));
  if (v == "required") return Locality::kRequired;
  if (v == "preferred") return Locality::kPreferred;
  if (v == "none") return Locality::kNone;
  return absl::InvalidArgumentError(
      absl::StrCat("--nvlink: '", std::string(value), "' is not one of required, preferred, none"));
}

absl::StatusOr<double> ParseGpuWatts(std::string_view value) {
  double watts = 0;
  const std::string_view v = Trim(value);
  const char* end = v.data() + v.size();
  const auto [ptr, ec] = std::from_chars(v.data(), end, watts);
  if (v.empty() || ec != std::errc() || ptr != end || !std::isfinite(watts)) {
    return absl::InvalidArgumentError(absl::StrCat("--gpu-watts: '", std::string(value), "' is not a number of watts"));
  }
  if (watts <= 0 || watts > kMaxGpuWatts) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu-watts: ", std::string(v), " is outside (0, ", kMaxGpuWatts, "] watts"));
  }
  return watts;
}

absl::StatusOr<JobOptions> ParseJobEnv(const std::vector<std::string_view>& env) {
  JobOptions options;
  for (std::string_view entry : env) {
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq);
    const std::string_view value = entry.substr(eq + 1);
    if (name == kNvlinkEnv) {
      absl::StatusOr<Locality> locality = ParseNvlink(value);
      if (!locality.ok()) return locality.status();
      options.locality = *locality;
    } else if (name == kGpuWattsEnv) {
      absl::StatusOr<double> watts = ParseGpuWatts(value);
      if (!watts.ok()) return watts.status();
      options.watts_per_gpu = *watts;
    }
  }
  return options;
}

const char* LocalityName(Locality locality) {
  switch (locality) {
    case Locality::kRequired: return "required";
    case Locality::kPreferred: return "preferred";
    case Locality::kNone: return "none";
  }
  return "preferred";
}

}  // namespace rackwise::slurm
