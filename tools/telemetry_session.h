// `rackwise place` and `explain` with telemetry: when the description has a `telemetry:` section (and
// --no-telemetry is not given), query its Prometheus server once, apply the readings to the session's ledger
// (every allocation in the state file is taken to be in the reading), and report what counted: the JSON keys
// "telemetry": "fresh"|"stale"|"off" and "measured_watts": {"rack": W}, and a line of text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "rackwise/ledger.h"
#include "rackwise/telemetry.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::cli {

// Fetches and applies; problems (a failed query, racks falling back to estimates) go to stderr, one
// "rackwise: telemetry: ..." line each. Returns what was applied (state kOff when skipped).
MeasuredDraw MeasureOnce(const v1::ClusterDescription& description, bool skip, Ledger* ledger);

// Adds "telemetry" and "measured_watts" (racks with a reading that counts, in W) to `json`.
void AddTelemetryJson(const Ledger& ledger, const MeasuredDraw& measured, nlohmann::json* json);
// "telemetry: fresh (12 of 12 racks measured)" or "telemetry: stale: <why>"; empty when off.
std::string TelemetryText(const MeasuredDraw& measured, int racks);

}  // namespace rackwise::cli
