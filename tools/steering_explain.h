// `rackwise explain` with steering (telemetry.on_overdraw: lower_limits): whether the job, once placed where the
// decision says, would run below its declared watts per GPU, and at what limit.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "rackwise/ledger.h"
#include "rackwise/placement_decision.h"

namespace rackwise::cli {

// One line for the text ("steering: job j would run at 812 W per GPU of its 962 W declared: the caps of its racks
// cannot hold every job at its declared watts" or "... at its declared watts"), and "steered_watts_per_gpu" /
// "declared_watts_per_gpu" in `json`. Empty when the decision cannot be committed to a copy of the ledger.
std::string SteeringNote(const Ledger& ledger, const PlacementDecision& decision, const std::string& id,
                         nlohmann::json* json);

}  // namespace rackwise::cli
