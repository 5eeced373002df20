// The administrator's tuning of placement, resolved from the description's `policy:` block with defaults.
#pragma once

#include <optional>

#include "rackwise/power_bounds.h"

namespace rackwise {

enum class Locality {
  kRequired,   // use no more NVLink domains than ceil(gpus / domain size), or wait
  kPreferred,  // try the minimum first; start spread out if it cannot
  kNone,       // no wish: fill fragments first so that whole domains stay free
};

struct PlacementWeights {
  double domain_packing = 4;
  double rack_packing = 2;
  double rail_alignment = 2;
  double power_headroom = 1;
};

// The default of policy.spread_cost_fraction, chosen by replaying traces (docs/design.md says why).
inline constexpr double kDefaultSpreadCostFraction = 0.2;
// Above this, a spread placement would be taken to cost more than running the job over again.
inline constexpr double kMaxSpreadCostFraction = 1.0;

struct PlacementPolicy {
  Locality default_locality = Locality::kPreferred;
  double power_reserve_fraction = 0;  // share of every cap the placer keeps free (the ledger enforces the cap)
  PlacementWeights weights;
  // Limits on declared watts per GPU. Each node type also has its own floor, the GPU's idle share (see
  // NodeType::min_per_gpu); the larger of the two applies.
  double min_watts_per_gpu = 0;
  double max_watts_per_gpu = kMaxWattsPerGpu;
  // How a `preferred` job whose fewest NVLink domains are not free now chooses between waiting for them and
  // starting spread out (PreferredHoldsOut in rackwise/shadow_time.h). spread_cost_fraction: what starting outside
  // its fewest domains is taken to cost the job, as a fraction of its time limit (0: nothing, so it never waits).
  // preferred_wait_seconds: the most it waits in all (an upper bound; unset: none but the rule's).
  double spread_cost_fraction = kDefaultSpreadCostFraction;
  std::optional<double> preferred_wait_seconds;
  // Power steering (power_steering.h) and oversubscription, as fractions.
  double steering_hysteresis_fraction = 0.05;
  double steering_floor_fraction = 0.3;  // of a GPU's nameplate watts
  bool steering_priority_weighted = false;
  double oversubscribe_fraction = 0;
};

}  // namespace rackwise
