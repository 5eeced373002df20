// One round of telemetry: the description's node query (and rack query, when set) against its Prometheus
// server, turned into PowerReadings for the core (rackwise/telemetry.h). Failures are not errors here: a source
// that fails is marked so, with its reason, and the core falls back to estimates for it.
#pragma once

#include <functional>

#include "prometheus_client.h"
#include "rackwise/telemetry.h"

namespace rackwise::telemetry {

// Seconds since the Unix epoch (Prometheus's sample timestamps are on this scale).
double NowUnixSeconds();

// `now_unix_s` is read when each answer has arrived (Prometheus stamps answers with their evaluation time, so a
// clock read before the request would make fresh samples look as if from the future).
PowerReadings FetchPowerReadings(const TelemetrySettings& settings, PrometheusClient& client,
                                 const std::function<double()>& now_unix_s = NowUnixSeconds);

}  // namespace rackwise::telemetry
