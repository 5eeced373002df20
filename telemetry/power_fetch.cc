// See power_fetch.h.
#include "power_fetch.h"

#include <chrono>

#include "prometheus_answer.h"

namespace rackwise::telemetry {
namespace {

// Runs one query; fills *ok, *error and *out.
void RunQuery(PrometheusClient& client, const std::string& query, const std::string& label,
              const std::function<double()>& now, bool* ok, std::string* error, std::vector<PowerReading>* out) {
  absl::StatusOr<std::string> body = client.Query(query);
  absl::StatusOr<std::vector<PowerReading>> readings =
      body.ok() ? ParseQueryAnswer(*body, label, now()) : absl::StatusOr<std::vector<PowerReading>>(body.status());
  *ok = readings.ok();
  if (readings.ok()) {
    *out = *std::move(readings);
  } else {
    *error = std::string(readings.status().message());
  }
}

}  // namespace

double NowUnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

PowerReadings FetchPowerReadings(const TelemetrySettings& settings, PrometheusClient& client,
                                 const std::function<double()>& now_unix_s) {
  PowerReadings r;
  if (!settings.enabled) return r;
  RunQuery(client, settings.node_power_query, settings.node_label, now_unix_s, &r.nodes_ok, &r.nodes_error, &r.nodes);
  if (!settings.rack_power_query.empty())
    RunQuery(client, settings.rack_power_query, settings.rack_label, now_unix_s, &r.racks_ok, &r.racks_error, &r.racks);
  return r;
}

}  // namespace rackwise::telemetry
