// The extender's measured power: applying a poll's readings to the ledger, the overdraw alarm and its
// response, and the telemetry gauges. See "measured power" in extender_service.h.
//
// on_overdraw in this face: `none` raises the alarm only; `requeue_newest` also evicts the newest pods on the
// rack (Eviction API, so PodDisruptionBudgets hold; their controllers recreate them and kube-scheduler places
// the replacements where the power is), once per overdraw; `lower_limits` steers every round (the core's
// PlanSteering through TelemetryTracker) and publishes, per allocation held below its declared watts, its limit
// (rackwise_overdraw_limit_watts_per_gpu and a log line per change). Placement refuses the rack in every case.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "extender_service.h"
#include "prometheus_text.h"

namespace rackwise::k8s {

std::vector<std::string> ExtenderService::ApplyPowerReadings(const TelemetrySettings& settings,
                                                             const PowerReadings& readings) {
  std::vector<std::string> log;
  std::vector<std::pair<std::string, std::string>> victims;  // (pod key, why)
  {
    std::lock_guard<std::mutex> lock(mu_);
    telemetry_settings_ = settings;
    // Steering raises an allocation counted oversubscribed back to what it declared, never above.
    SteeringFacts facts;
    oversubscribed_.AddDeclaredTo(&facts);
    log = telemetry_.Apply(settings, readings, &ledger_, facts);
    if (settings.on_overdraw == OverdrawAction::kRequeueNewest) victims = NewestPodsOverCapLocked();
  }
  for (const auto& [key, why] : victims) {
    const size_t slash = key.find('/');
    absl::Status s = binder_ ? binder_->EvictPod(key.substr(0, slash), key.substr(slash + 1))
                             : absl::FailedPreconditionError("standalone: no API server to evict through");
    log.push_back(
        s.ok() ? absl::StrCat("OVERDRAW: requeue_newest: evicted pod ", key, " (", why, ")")
               : absl::StrCat("OVERDRAW: requeue_newest: cannot evict pod ", key, " (", why, "): ", s.message()));
  }
  return log;
}

void ExtenderService::RenderOversubscriptionLocked(std::string* out) const {
  if (topology_->policy().oversubscribe_fraction <= 0 || topology_->node_types().empty()) return;
  // Whether a pod declaring its watts would be counted oversubscribed now, and if not, why (the core's words).
  PlacementRequest probe;
  probe.gpus = 1;
  probe.watts_per_gpu = MilliwattsToWatts(topology_->node_types().front().per_gpu);
  const OversubscribedWatts now = CountLocked(probe);
  daemon::Gauge(out, "rackwise_oversubscription_active",
                "1 while policy.oversubscribe_pct applies (steering on, telemetry fresh on every rack); else 0, "
                "with the reason in rackwise_oversubscription_off_info.");
  absl::StrAppend(out, "rackwise_oversubscription_active ", now.applied ? 1 : 0, "\n");
  if (!now.applied) {
    daemon::Gauge(out, "rackwise_oversubscription_off_info", "Why policy.oversubscribe_pct does not apply now.");
    absl::StrAppend(out, "rackwise_oversubscription_off_info{reason=\"", daemon::Label(now.why_not), "\"} 1\n");
  }
  v1::ClusterState listed;
  oversubscribed_.AddTo(&listed);
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

std::vector<std::pair<std::string, std::string>> ExtenderService::NewestPodsOverCapLocked() const {
  // Each allocation's pod: alone, by its ledger id; in a group, by the slot it was bound to. Free gang slots
  // have no pod (and no real draw): they are left out of the choice.
  absl::flat_hash_map<std::string, std::string> pod_of;
  for (const auto& [key, record] : pods_) {
    if (!record.allocation_id.empty()) pod_of[record.allocation_id] = key;
  }
  for (const auto& [group, reservation] : gangs_.all()) {
    for (const GangSlot& slot : reservation.slots) {
      if (!slot.pod.empty()) pod_of[slot.allocation_id] = slot.pod;
    }
  }
  std::vector<std::pair<std::string, std::string>> victims;
  for (Overdraw o : telemetry_.new_overdraws()) {
    std::erase_if(o.allocations, [&](const std::string& id) { return !pod_of.contains(id); });
    const std::vector<std::string> ids = PlanRequeueNewest(ledger_, o, [&](const std::string& id) {
      auto record = pods_.find(pod_of.at(id));
      return record == pods_.end() ? std::nullopt : std::optional<int64_t>(record->second.booked_ms);
    });
    for (const std::string& id : ids) {
      victims.emplace_back(pod_of.at(id),
                           absl::StrCat(OverdrawScope(*topology_, o), " measures over its cap; newest pod there"));
    }
  }
  return victims;
}

OversubscribedWatts ExtenderService::CountLocked(const PlacementRequest& request) const {
  return CountOversubscribed(*topology_, request, telemetry_settings_, telemetry_.state());
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
    daemon::Gauge(out, name, help);
    for (RackId r = 0; r < static_cast<RackId>(racks.size()); ++r) {
      if (std::optional<Milliwatts> w = watts(r))
        absl::StrAppend(out, name, "{rack=\"", daemon::Label(racks[r].name), "\"} ", MilliwattsToWatts(*w), "\n");
    }
  };
  per_rack("rackwise_rack_estimated_watts", "A rack's estimated draw: idle draw plus what allocations declare.",
           [&](RackId r) { return std::optional<Milliwatts>(ledger_.rack_draw(r)); });
  per_rack("rackwise_rack_measured_watts",
           "A rack's measured draw (the last fresh reading plus allocations made since); absent without one.",
           [&](RackId r) { return ledger_.measured_rack_draw_now(r); });
  per_rack("rackwise_rack_counted_watts", "The draw placement checks against the cap: max(estimate, measured).",
           [&](RackId r) { return std::optional<Milliwatts>(ledger_.counted_rack_draw(r)); });
  daemon::Gauge(out, "rackwise_telemetry_fresh",
                "1 when every rack has a fresh reading; 0 when stale or failing (racks without one count estimates).");
  absl::StrAppend(out, "rackwise_telemetry_fresh ", telemetry_.state() == TelemetryState::kFresh ? 1 : 0, "\n");
  daemon::Gauge(out, "rackwise_telemetry_state", "1 for the telemetry's current state: off, fresh or stale.");
  for (TelemetryState s : {TelemetryState::kOff, TelemetryState::kFresh, TelemetryState::kStale})
    absl::StrAppend(out, "rackwise_telemetry_state{state=\"", TelemetryStateName(s), "\"} ",
                    s == telemetry_.state() ? 1 : 0, "\n");
  daemon::Gauge(out, "rackwise_rack_overdraw",
                "1 while a rack measures above its cap (alarm): nothing more is placed there.");
  for (RackId r = 0; r < static_cast<RackId>(racks.size()); ++r) {
    const auto& over_racks = telemetry_.overdrawn_racks();
    const bool over = std::find(over_racks.begin(), over_racks.end(), r) != over_racks.end();
    absl::StrAppend(out, "rackwise_rack_overdraw{rack=\"", daemon::Label(racks[r].name), "\"} ", over ? 1 : 0, "\n");
  }
  RenderOversubscriptionLocked(out);
  if (!telemetry_.lowered_limits().empty()) {
    daemon::Gauge(
        out, "rackwise_overdraw_limit_watts_per_gpu",
        "on_overdraw lower_limits: the steered GPU power limit of an allocation held below its declared watts.");
    for (const LimitChange& c : telemetry_.lowered_limits())
      absl::StrAppend(out, "rackwise_overdraw_limit_watts_per_gpu{allocation=\"", daemon::Label(c.allocation), "\"} ",
                      MilliwattsToWatts(c.to_per_gpu), "\n");
  }
}

}  // namespace rackwise::k8s
