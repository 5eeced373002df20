// How `rackwise trace` and `rackwise simulate` report a trace that does not fit the cluster: one warning line per
// job shape on stderr, and the same as JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "rackwise/trace_fit.h"

namespace rackwise::cli {

// Prints nothing when every job fits. `who`: the command, for the message prefix.
void WarnTraceMisfits(const TraceFit& fit, const std::string& who, const std::string& cluster);
// [{"gpus":..,"gpus_per_node":..,"watts_per_gpu":..,"jobs":..,"reason":".."}], empty when every job fits.
nlohmann::ordered_json TraceMisfitsJson(const TraceFit& fit);

}  // namespace rackwise::cli
