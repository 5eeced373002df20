// See telemetry_session.h.
#include "telemetry_session.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "power_fetch.h"
#include "prometheus_client.h"

namespace rackwise::cli {

MeasuredDraw MeasureOnce(const v1::ClusterDescription& description, bool skip, Ledger* ledger) {
  const TelemetrySettings settings = TelemetrySettings::FromDescription(description);
  if (skip || !settings.enabled) return MeasuredDraw{};
  telemetry::PrometheusClientOptions options;
  options.connect_timeout_ms = 2000;
  options.timeout_ms = 5000;
  telemetry::PrometheusClient client(settings.prometheus_url, options);
  const PowerReadings readings = telemetry::FetchPowerReadings(settings, client);
  MeasuredDraw measured = MeasureRacks(ledger->topology(), settings, readings);
  for (const std::string& p : measured.problems) std::fprintf(stderr, "rackwise: telemetry: %s\n", p.c_str());
  ApplyMeasuredDraw(measured, settings, /*count_recent=*/false, ledger);
  return measured;
}

void AddTelemetryJson(const Ledger& ledger, const MeasuredDraw& measured, nlohmann::json* json) {
  (*json)["telemetry"] = TelemetryStateName(measured.state);
  nlohmann::json watts = nlohmann::json::object();
  const Topology& t = ledger.topology();
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    if (std::optional<Milliwatts> m = ledger.measured_rack_draw_now(r))
      watts[t.racks()[r].name] = MilliwattsToWatts(*m);
  }
  (*json)["measured_watts"] = std::move(watts);
}

std::string TelemetryText(const MeasuredDraw& measured, int racks) {
  switch (measured.state) {
    case TelemetryState::kOff: return "";
    case TelemetryState::kFresh:
      return absl::StrCat("telemetry: fresh (", measured.measured_racks, " of ", racks, " racks measured)\n");
    case TelemetryState::kStale:
      return absl::StrCat("telemetry: stale (", measured.measured_racks, " of ", racks,
                          " racks measured; the others count their estimates)", measured.problems.empty() ? "" : ": ",
                          absl::StrJoin(measured.problems, "; "), "\n");
  }
  return "";
}

}  // namespace rackwise::cli
