// Measured power as facts: the description's `telemetry:` settings, the readings a face fetched (with their
// age), and what they mean for every rack. No clock and no I/O here: faces fetch (tools/, k8s_extender/,
// slurm_plugin/ through the telemetry/ client), pass ages in seconds, and apply the result to a Ledger with
// Ledger::SetMeasuredDraw. The placer then counts max(estimate, measured) while a reading is fresh (less an
// opt-in share of the gap when a rack measures below its estimate; see ledger.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "rackwise/ledger.h"
#include "rackwise/topology.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise {

enum class TelemetryState {
  kOff,    // no telemetry section, or the face was told to skip it
  kFresh,  // every rack has a fresh reading
  kStale,  // the source failed or some racks have no fresh reading: those count their estimate
};
const char* TelemetryStateName(TelemetryState state);  // "off", "fresh", "stale"

enum class OverdrawAction { kNone, kLowerLimits, kRequeueNewest };
const char* OverdrawActionName(OverdrawAction action);  // "none", "lower_limits", "requeue_newest"

// The `telemetry:` section with its documented defaults applied.
struct TelemetrySettings {
  bool enabled = false;  // the description has a telemetry section
  std::string prometheus_url;
  std::string node_power_query;
  std::string node_label = "Hostname";
  std::string rack_power_query;  // empty: no per-rack query
  std::string rack_label;
  double interval_s = 15;
  double stale_after_s = 60;
  double reclaim_fraction = 0;  // reclaim_pct / 100
  OverdrawAction on_overdraw = OverdrawAction::kNone;

  static TelemetrySettings FromDescription(const v1::ClusterDescription& description);
};

// One value of a query's answer: the label value naming a node or rack, watts, and how old the sample is.
struct PowerReading {
  std::string name;
  double watts = 0;
  double age_s = 0;
};

// What one poll brought back. A source that failed carries its error and no readings.
struct PowerReadings {
  bool nodes_ok = false;
  std::string nodes_error;
  std::vector<PowerReading> nodes;  // GPU watts per node (the node's idle watts are added here)
  bool racks_ok = false;            // meaningless when there is no rack query
  std::string racks_error;
  std::vector<PowerReading> racks;  // whole-rack watts (PDU)
};

// The most one reading may say: far above any real node or rack, so that a broken exporter cannot overflow
// the ledger's arithmetic. Readings above it are ignored (and said so).
inline constexpr double kMaxNodeReadingWatts = 1e6;
inline constexpr double kMaxRackReadingWatts = 1e8;

struct MeasuredDraw {
  TelemetryState state = TelemetryState::kOff;
  std::vector<std::optional<Milliwatts>> racks;  // per RackId: the measured whole-rack draw, or none (estimate)
  int measured_racks = 0;
  std::vector<std::string> problems;  // why a source or a rack falls back, one sentence each
};

// A rack's measured draw is its PDU reading when the rack query gives a fresh one, else the sum over its nodes
// of idle watts plus the node's fresh GPU reading when every node of the rack has one; otherwise none. A
// reading is fresh when 0 <= age_s <= stale_after_s; non-finite, negative or absurd values are ignored.
MeasuredDraw MeasureRacks(const Topology& topology, const TelemetrySettings& settings, const PowerReadings& readings);

// Applies a measurement to a ledger (see Ledger::SetMeasuredDraw); state kOff clears any earlier one.
void ApplyMeasuredDraw(const MeasuredDraw& measured, const TelemetrySettings& settings, bool count_recent,
                       Ledger* ledger);

// A sentence naming a rack's measured watts next to its estimate when a reading counts for it, e.g.
// "rack r01 measures 27.3 kW (estimate 20.0 kW; usable cap 27.0 kW)"; empty when the rack has no reading.
std::string MeasuredRackNote(const Ledger& ledger, RackId rack);

// A rack, or a power domain (a row's or a hall's feed), whose last reading is above its cap: nothing more is
// placed there (its counted draw is above the cap), the faces raise an alarm naming it and the allocations in it,
// and act as on_overdraw says. A power domain's reading is the sum of its racks' readings, and counts only when
// every rack below it has one (an estimate is not a measurement of the feed).
struct Overdraw {
  RackId rack = kNoId;                 // the rack over its cap, or kNoId when
  PowerDomainId power_domain = kNoId;  // a power domain is
  Milliwatts measured = 0;
  Milliwatts cap = 0;
  std::vector<std::string> allocations;  // ids of the allocations with GPUs in the rack or domain, sorted
};
std::vector<Overdraw> FindOverdraws(const Ledger& ledger);
// What is over its cap: "rack r01" or "power domain row-a".
std::string OverdrawScope(const Topology& topology, const Overdraw& overdraw);
// "rack r01 measures 31.2 kW, above its 30.0 kW cap; jobs on it: a, b"
std::string OverdrawMessage(const Ledger& ledger, const Overdraw& overdraw);

// on_overdraw: lower_limits steers (ledger_steering.h, power_steering.h); a change of one allocation's limit.
struct LimitChange {
  std::string allocation;
  Milliwatts from_per_gpu = 0;
  Milliwatts to_per_gpu = 0;
};

// on_overdraw: requeue_newest. The allocations in the rack (or power domain) to requeue so that its measured draw
// falls under its cap: the most recently started first (a job that started last is the likeliest cause, and has lost
// the least work), each taking its charged watts in the rack off the measured excess, until no excess is left. Start
// times are facts from the face (`started_at`, seconds on any one clock; nullopt: unknown, counted as newest); ties go
// to the greater id. Returns ids in the order to requeue; empty when nothing is over its cap.
std::vector<std::string> PlanRequeueNewest(const Ledger& ledger, const Overdraw& overdraw,
                                           absl::FunctionRef<std::optional<int64_t>(const std::string& id)> started_at);

}  // namespace rackwise
