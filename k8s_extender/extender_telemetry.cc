// The extender's measured power: applying a poll's readings to the ledger, the overdraw alarm and its
// response, and the telemetry gauges. See "measured power" in extender_service.h.
//
// on_overdraw in this face: `none` and `requeue_newest` raise the alarm only (the extender does not evict pods:
// kube-scheduler and the workload's controller own that); `lower_limits` also publishes, per allocation on the
// overdrawn rack, the lowered watts per GPU (rackwise_overdraw_limit_watts_per_gpu and a log line) for the node
// agent that enforces GPU power limits to apply. Placement refuses the rack in every case.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "extender_service.h"
#include "prometheus_text.h"

namespace rackwise::k8s {

std::vector<std::string> ExtenderService::ApplyPowerReadings(const TelemetrySettings& settings,
                                                             const PowerReadings& readings) {
  std::lock_guard<std::mutex> lock(mu_);
  return telemetry_.Apply(settings, readings, &ledger_);
}

TelemetryState ExtenderService::telemetry_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return telemetry_.state();
}

void ExtenderService::RenderTelemetryMetrics(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto& racks = topology_->racks();
  // One gauge with a sample per rack; `watts` returns nullopt for racks that have no sample.
  auto per_rack = [&](absl::string_view name, absl::string_view help, auto watts) {
    Gauge(out, name, help);
    for (RackId r = 0; r < static_cast<RackId>(racks.size()); ++r) {
      if (std::optional<Milliwatts> w = watts(r))
        absl::StrAppend(out, name, "{rack=\"", Label(racks[r].name), "\"} ", MilliwattsToWatts(*w), "\n");
    }
  };
  per_rack("rackwise_rack_estimated_watts", "A rack's estimated draw: idle draw plus what allocations declare.",
           [&](RackId r) { return std::optional<Milliwatts>(ledger_.rack_draw(r)); });
  per_rack("rackwise_rack_measured_watts",
           "A rack's measured draw (the last fresh reading plus allocations made since); absent without one.",
           [&](RackId r) { return ledger_.measured_rack_draw_now(r); });
  per_rack("rackwise_rack_counted_watts", "The draw placement checks against the cap: max(estimate, measured).",
           [&](RackId r) { return std::optional<Milliwatts>(ledger_.counted_rack_draw(r)); });
  Gauge(out, "rackwise_telemetry_fresh",
        "1 when every rack has a fresh reading; 0 when stale or failing (racks without one count estimates).");
  absl::StrAppend(out, "rackwise_telemetry_fresh ", telemetry_.state() == TelemetryState::kFresh ? 1 : 0, "\n");
  Gauge(out, "rackwise_telemetry_state", "1 for the telemetry's current state: off, fresh or stale.");
  for (TelemetryState s : {TelemetryState::kOff, TelemetryState::kFresh, TelemetryState::kStale})
    absl::StrAppend(out, "rackwise_telemetry_state{state=\"", TelemetryStateName(s), "\"} ",
                    s == telemetry_.state() ? 1 : 0, "\n");
  Gauge(out, "rackwise_rack_overdraw", "1 while a rack measures above its cap (alarm): nothing more is placed there.");
  for (RackId r = 0; r < static_cast<RackId>(racks.size()); ++r) {
    const auto& over_racks = telemetry_.overdrawn_racks();
    const bool over = std::find(over_racks.begin(), over_racks.end(), r) != over_racks.end();
    absl::StrAppend(out, "rackwise_rack_overdraw{rack=\"", Label(racks[r].name), "\"} ", over ? 1 : 0, "\n");
  }
  if (!telemetry_.lowered_limits().empty()) {
    Gauge(out, "rackwise_overdraw_limit_watts_per_gpu",
          "on_overdraw lower_limits: the lowered GPU power limit for an allocation on an overdrawn rack.");
    for (const LimitChange& c : telemetry_.lowered_limits())
      absl::StrAppend(out, "rackwise_overdraw_limit_watts_per_gpu{allocation=\"", Label(c.allocation), "\"} ",
                      MilliwattsToWatts(c.to_per_gpu), "\n");
  }
}

}  // namespace rackwise::k8s
