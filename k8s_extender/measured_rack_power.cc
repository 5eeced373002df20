// The extender's measured power. See measured_rack_power.h.
#include "measured_rack_power.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "prometheus_text.h"

namespace rackwise::k8s {

std::vector<std::string> MeasuredRackPower::Apply(const TelemetrySettings& settings, const PowerReadings& readings,
                                                  Ledger* ledger, const OversubscribedAllocations& oversubscribed) {
  settings_ = settings;
  SteeringFacts facts;
  oversubscribed.AddDeclaredTo(&facts);
  return tracker_.Apply(settings, readings, ledger, facts);
}

std::vector<std::pair<std::string, std::string>> MeasuredRackPower::NewestPodsOverCap(
    const Ledger& ledger, const absl::flat_hash_map<std::string, std::string>& pod_of,
    absl::FunctionRef<std::optional<int64_t>(const std::string& pod)> booked_ms) const {
  std::vector<std::pair<std::string, std::string>> victims;
  for (Overdraw o : tracker_.new_overdraws()) {
    std::erase_if(o.allocations, [&](const std::string& id) { return !pod_of.contains(id); });
    const std::vector<std::string> ids =
        PlanRequeueNewest(ledger, o, [&](const std::string& id) { return booked_ms(pod_of.at(id)); });
    for (const std::string& id : ids) {
      victims.emplace_back(
          pod_of.at(id), absl::StrCat(OverdrawScope(ledger.topology(), o), " measures over its cap; newest pod there"));
    }
  }
  return victims;
}

OversubscribedWatts MeasuredRackPower::Count(const Topology& topology, const PlacementRequest& request) const {
  return CountOversubscribed(topology, request, settings_, tracker_.state());
}

void MeasuredRackPower::RenderOversubscription(const Topology& topology,
                                               const OversubscribedAllocations& oversubscribed,
                                               std::string* out) const {
  if (topology.policy().oversubscribe_fraction <= 0 || topology.node_types().empty()) return;
  // Whether a pod declaring its watts would be counted oversubscribed now, and if not, why (the core's words).
  PlacementRequest probe;
  probe.gpus = 1;
  probe.watts_per_gpu = MilliwattsToWatts(topology.node_types().front().per_gpu);
  const OversubscribedWatts now = Count(topology, probe);
  daemon::Gauge(out, "rackwise_oversubscription_active",
                "1 while policy.oversubscribe_pct applies (steering on, telemetry fresh on every rack); else 0, "
                "with the reason in rackwise_oversubscription_off_info.");
  absl::StrAppend(out, "rackwise_oversubscription_active ", now.applied ? 1 : 0, "\n");
  if (!now.applied) {
    daemon::Gauge(out, "rackwise_oversubscription_off_info", "Why policy.oversubscribe_pct does not apply now.");
    absl::StrAppend(out, "rackwise_oversubscription_off_info{reason=\"", daemon::Label(now.why_not), "\"} 1\n");
  }
  v1::ClusterState listed;
  oversubscribed.AddTo(&listed);
  if (listed.oversubscribed().empty()) return;
  // One gauge per allocation for each of the two watts.
  using Entry = v1::OversubscribedAllocation;
  const auto per_allocation = [&](const char* name, const char* help, absl::FunctionRef<double(const Entry&)> watts) {
    daemon::Gauge(out, name, help);
    for (const Entry& o : listed.oversubscribed())
      absl::StrAppend(out, name, "{allocation=\"", daemon::Label(o.id()), "\"} ", watts(o), "\n");
  };
  per_allocation("rackwise_oversubscribed_counted_watts_per_gpu",
                 "An allocation counted oversubscribed: the watts per GPU the ledger counts for it.",
                 [](const Entry& o) { return o.counted_watts_per_gpu(); });
  per_allocation("rackwise_oversubscribed_declared_watts_per_gpu",
                 "An allocation counted oversubscribed: the watts per GPU it declared (its GPUs' limit).",
                 [](const Entry& o) { return o.declared_watts_per_gpu(); });
}

void MeasuredRackPower::RenderMetrics(const Ledger& ledger, const OversubscribedAllocations& oversubscribed,
                                      std::string* out) const {
  const auto& racks = ledger.topology().racks();
  // One gauge with a sample per rack; `watts` returns nullopt for racks that have no sample.
  auto per_rack = [&](absl::string_view name, absl::string_view help, auto watts) {
    daemon::Gauge(out, name, help);
    for (RackId r = 0; r < static_cast<RackId>(racks.size()); ++r) {
      if (std::optional<Milliwatts> w = watts(r))
        absl::StrAppend(out, name, "{rack=\"", daemon::Label(racks[r].name), "\"} ", MilliwattsToWatts(*w), "\n");
    }
  };
  per_rack("rackwise_rack_estimated_watts", "A rack's estimated draw: idle draw plus what allocations declare.",
           [&](RackId r) { return std::optional<Milliwatts>(ledger.rack_draw(r)); });
  per_rack("rackwise_rack_measured_watts",
           "A rack's measured draw (the last fresh reading plus allocations made since); absent without one.",
           [&](RackId r) { return ledger.measured_rack_draw_now(r); });
  per_rack("rackwise_rack_counted_watts", "The draw placement checks against the cap: max(estimate, measured).",
           [&](RackId r) { return std::optional<Milliwatts>(ledger.counted_rack_draw(r)); });
  daemon::Gauge(out, "rackwise_telemetry_fresh",
                "1 when every rack has a fresh reading; 0 when stale or failing (racks without one count estimates).");
  absl::StrAppend(out, "rackwise_telemetry_fresh ", tracker_.state() == TelemetryState::kFresh ? 1 : 0, "\n");
  daemon::Gauge(out, "rackwise_telemetry_state", "1 for the telemetry's current state: off, fresh or stale.");
  for (TelemetryState s : {TelemetryState::kOff, TelemetryState::kFresh, TelemetryState::kStale})
    absl::StrAppend(out, "rackwise_telemetry_state{state=\"", TelemetryStateName(s), "\"} ",
                    s == tracker_.state() ? 1 : 0, "\n");
  daemon::Gauge(out, "rackwise_rack_overdraw",
                "1 while a rack measures above its cap (alarm): nothing more is placed there.");
  for (RackId r = 0; r < static_cast<RackId>(racks.size()); ++r) {
    const auto& over_racks = tracker_.overdrawn_racks();
    const bool over = std::find(over_racks.begin(), over_racks.end(), r) != over_racks.end();
    absl::StrAppend(out, "rackwise_rack_overdraw{rack=\"", daemon::Label(racks[r].name), "\"} ", over ? 1 : 0, "\n");
  }
  RenderOversubscription(ledger.topology(), oversubscribed, out);
  if (!tracker_.lowered_limits().empty()) {
    daemon::Gauge(
        out, "rackwise_overdraw_limit_watts_per_gpu",
        "on_overdraw lower_limits: the steered GPU power limit of an allocation held below its declared watts.");
    for (const LimitChange& c : tracker_.lowered_limits())
      absl::StrAppend(out, "rackwise_overdraw_limit_watts_per_gpu{allocation=\"", daemon::Label(c.allocation), "\"} ",
                      MilliwattsToWatts(c.to_per_gpu), "\n");
  }
}

}  // namespace rackwise::k8s
