// The extender's measured power: a poll's readings applied to the ledger (the core's TelemetryTracker), the
// overdraw answer it calls for, whether a pod counts oversubscribed now, and the telemetry gauges.
//
// on_overdraw in this face: `none` raises the alarm only; `requeue_newest` also evicts the newest pods on the
// rack (Eviction API, so PodDisruptionBudgets hold; their controllers recreate them and kube-scheduler places
// the replacements where the power is), once per overdraw; `lower_limits` steers every round (the core's
// PlanSteering through TelemetryTracker) and publishes, per allocation held below its declared watts, its limit
// (rackwise_overdraw_limit_watts_per_gpu and a log line per change). Placement refuses the rack in every case.
//
// It holds the last poll's outcome (for /metrics, /limits and for logging changes once) and its settings (off
// until the first poll). Thread safety: none of its own. ExtenderService calls it only with its mutex held; the
// evictions it plans are made by the service outside that mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "rackwise/ledger.h"
#include "rackwise/oversubscribed_allocations.h"
#include "rackwise/oversubscription.h"
#include "rackwise/telemetry.h"
#include "rackwise/telemetry_tracker.h"
#include "rackwise/topology.h"

namespace rackwise::k8s {

class MeasuredRackPower {
 public:
  // Applies one poll's readings to `ledger` under `settings`; steering raises an allocation counted
  // oversubscribed back to what it declared, never above. Returns log lines for what changed.
  std::vector<std::string> Apply(const TelemetrySettings& settings, const PowerReadings& readings, Ledger* ledger,
                                 const OversubscribedAllocations& oversubscribed);
  // on_overdraw: requeue_newest is in force (the last poll's settings).
  bool requeues_newest() const { return settings_.on_overdraw == OverdrawAction::kRequeueNewest; }
  // The pods to evict for the racks that just went over their cap, with why: the core's PlanRequeueNewest among
  // the allocations that have a pod (`pod_of`: allocation id -> pod key; free gang slots have none, and no real
  // draw). `booked_ms` says when a pod was booked (nullopt: unknown).
  std::vector<std::pair<std::string, std::string>> NewestPodsOverCap(
      const Ledger& ledger, const absl::flat_hash_map<std::string, std::string>& pod_of,
      absl::FunctionRef<std::optional<int64_t>(const std::string& pod)> booked_ms) const;

  // policy.oversubscribe_pct: the core's CountOversubscribed with this face's telemetry.
  OversubscribedWatts Count(const Topology& topology, const PlacementRequest& request) const;
  TelemetryState state() const { return tracker_.state(); }
  // Allocation id -> the watts per GPU steering holds it at (on_overdraw: lower_limits).
  const absl::flat_hash_map<std::string, Milliwatts>& steered_limits() const { return tracker_.steered_limits(); }

  // Gauges: estimated, measured and counted draw per rack, telemetry freshness, overdraw alarms, oversubscription.
  void RenderMetrics(const Ledger& ledger, const OversubscribedAllocations& oversubscribed, std::string* out) const;

 private:
  // Gauges: whether oversubscription applies now (or why not), and the allocations counted oversubscribed.
  void RenderOversubscription(const Topology& topology, const OversubscribedAllocations& oversubscribed,
                              std::string* out) const;

  TelemetryTracker tracker_;    // the last poll's outcome
  TelemetrySettings settings_;  // the last poll's settings (off until the first)
};

}  // namespace rackwise::k8s
