// SPDX-License-Identifier: GPL-2.0-or-later
// Parsing of the per-job rackwise options shared by the SPANK plugin and the select plugin.
#include "job_options.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace rackwise::slurm {
absl::StatusOr<Locality> ParseNvlink(std::string_view value) {
  if (std::optional<Locality> locality = ParseLocality(value)) return *locality;
  return absl::InvalidArgumentError(
      absl::StrCat("--nvlink: '", std::string(value), "' is not one of ", kLocalityChoices));
}

absl::StatusOr<double> ParseGpuWatts(std::string_view value) {
  absl::StatusOr<double> watts = ParseWattsPerGpu(value);  // the core's bounds, as for every face
  if (!watts.ok()) return absl::InvalidArgumentError(absl::StrCat("--gpu-watts: ", watts.status().message()));
  return *watts;
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

}  // namespace rackwise::slurm
