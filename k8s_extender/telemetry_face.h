// Wires the description's telemetry into the extender: a background poller (rackwise_telemetry) whose readings
// ExtenderService::ApplyPowerReadings applies under its lock, with the log lines it returns written out.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "extender_service.h"
#include "telemetry_poller.h"

namespace rackwise::k8s {

// Null when the description has no telemetry section.
std::unique_ptr<telemetry::TelemetryPoller> StartTelemetry(const v1::ClusterDescription& description,
                                                           ExtenderService* service,
                                                           std::function<void(const std::string&)> log);

}  // namespace rackwise::k8s
