// See telemetry_face.h.
#include "telemetry_face.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "power_fetch.h"
#include "prometheus_client.h"

namespace rackwise::k8s {

std::unique_ptr<telemetry::TelemetryPoller> StartTelemetry(const v1::ClusterDescription& description,
                                                           ExtenderService* service,
                                                           std::function<void(const std::string&)> log) {
  const TelemetrySettings settings = TelemetrySettings::FromDescription(description);
  if (!settings.enabled) return nullptr;
  telemetry::PrometheusClientOptions options;
  // A poll never takes longer than its interval (and never more than 5 s), so readings stay evenly spaced.
  options.timeout_ms = static_cast<long>(std::min(5.0, settings.interval_s) * 1000);
  options.connect_timeout_ms = std::min(options.timeout_ms, 1000L);
  auto client = std::make_shared<telemetry::PrometheusClient>(settings.prometheus_url, options);
  log(absl::StrCat("telemetry: polling ", settings.prometheus_url, " every ", settings.interval_s, " s (stale after ",
                   settings.stale_after_s, " s, reclaim ", settings.reclaim_fraction * 100, "%, on_overdraw ",
                   OverdrawActionName(settings.on_overdraw), ")"));
  return std::make_unique<telemetry::TelemetryPoller>(
      settings.interval_s, [settings, client] { return telemetry::FetchPowerReadings(settings, *client); },
      [settings, service, log](const PowerReadings& readings) {
        for (const std::string& line : service->ApplyPowerReadings(settings, readings)) log(line);
      });
}

}  // namespace rackwise::k8s
