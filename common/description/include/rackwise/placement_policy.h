// The administrator's tuning of placement, resolved from the description's `policy:` block with defaults.
#pragma once

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

struct PlacementPolicy {
  Locality default_locality = Locality::kPreferred;
  double power_reserve_fraction = 0;  // share of every cap the placer keeps free (the ledger enforces the cap)
  PlacementWeights weights;
  // Limits on declared watts per GPU. Each node type also has its own floor, the GPU's idle share (see
  // NodeType::min_per_gpu); the larger of the two applies.
  double min_watts_per_gpu = 0;
  double max_watts_per_gpu = kMaxWattsPerGpu;
  // A `preferred` job that has waited less than this is placed as `required` (fewest domains or wait).
  double preferred_wait_seconds = 0;
  // Power steering (power_steering.h) and oversubscription, as fractions.
  double steering_hysteresis_fraction = 0.05;
  double steering_floor_fraction = 0.3;  // of a GPU's nameplate watts
  bool steering_priority_weighted = false;
  double oversubscribe_fraction = 0;
};

}  // namespace rackwise
