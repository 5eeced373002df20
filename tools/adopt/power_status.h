// What `rackwise status` shows: one row per rack and per power domain with its draw, cap, usable cap (the cap
// less the policy's reserve), headroom and the jobs running below it. Built from a ledger (a description plus a
// state file, e.g. the one the Slurm plugin keeps in StateSaveLocation) or from the extender's ClusterState.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rackwise/ledger.h"
#include "rackwise/v1/placement_service.pb.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise::adopt {

struct PowerRow {
  std::string kind;  // "rack" or "power_domain"
  std::string name;
  std::string parent;                    // the rack's power domain or the domain's parent; empty at a root
  double draw_watts = 0;                 // the estimate: idle draw plus the allocations' declared watts
  double counted_watts = 0;              // what decisions count (the measured draw where telemetry is on)
  std::optional<double> measured_watts;  // racks with a fresh reading
  double cap_watts = 0;
  double usable_cap_watts = 0;
  double headroom_watts = 0;  // racks: the least room over the rack and every domain above it
  int jobs = -1;              // -1: not known (the extender's ClusterState does not say)
  int used_gpus = -1, gpus = -1;
  // With steering (telemetry.on_overdraw: lower_limits): the draw with every job at the limit steering gives it
  // for this state, and how many jobs it holds below their declared watts.
  std::optional<double> steered_watts;
  int held_jobs = -1;
};

// A job the writer counts at less than it declared (policy.oversubscribe_pct): its GPUs' limit is the declared.
struct OversubscribedRow {
  std::string id;
  double counted_watts_per_gpu = 0, declared_watts_per_gpu = 0;
};

struct PowerStatus {
  std::string cluster;
  std::string source;  // the state file or the gRPC address
  int allocations = 0;
  std::vector<PowerRow> rows;  // power domains root first, each followed by its racks
  std::vector<OversubscribedRow> oversubscribed;
};

// The state's jobs counted oversubscribed, as rows of `status`.
void AddOversubscribed(const v1::ClusterState& state, PowerStatus* status);

// From the core's power view (rackwise/power_view.h) of a ledger, or of the extender's ledger over gRPC.
PowerStatus StatusFromLedger(const Ledger& ledger);
// An extender older than the `power` rows: racks only, without jobs or a measured draw.
PowerStatus StatusFromClusterState(const v1::ClusterStateResponse& state);

// Adds the steered draw and held jobs to the rows of `status` (built from the same ledger): what the steering rule
// (ledger_steering.h) sets for this state when every job starts from its declared watts.
// Jobs counted oversubscribed (status->oversubscribed) go back up to their declared watts, never above.
void AddSteering(const Ledger& ledger, PowerStatus* status);

// A fixed-width table, `top` style: one line per row, children indented under their domain; with steering,
// COUNTED, STEERED and HELD columns at the end.
std::string StatusTable(const PowerStatus& status);
nlohmann::ordered_json StatusJson(const PowerStatus& status);

}  // namespace rackwise::adopt
