// The power tree as an operator reads it: one row per power domain and rack with its draw (estimated, counted and
// measured), cap, usable cap, headroom, jobs and GPUs. What `rackwise status` prints from a state file and what
// the extender's ClusterState returns, built in one place so the two always agree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rackwise/ledger.h"

namespace rackwise {

struct PowerViewRow {
  enum class Kind { kPowerDomain, kRack };
  Kind kind = Kind::kRack;
  std::string name;
  std::string parent;                  // the rack's power domain or the domain's parent; empty at a root
  Milliwatts draw = 0;                 // the estimate: idle draw plus the allocations' declared watts
  Milliwatts counted = 0;              // what decisions count: the estimate, or the measured draw where telemetry is on
  std::optional<Milliwatts> measured;  // racks with a fresh reading: the reading plus what was placed since
  Milliwatts cap = 0;
  Milliwatts usable_cap = 0;  // the cap less the policy's reserve
  Milliwatts headroom = 0;    // racks: the least room over the rack and every power domain above it
  int jobs = 0;               // allocations with GPUs below the row
  int used_gpus = 0;
  int gpus = 0;
};

// Power domains depth-first from the roots in the description's order, each followed by its child domains and
// then its racks; racks under no power domain last.
std::vector<PowerViewRow> BuildPowerView(const Ledger& ledger);

}  // namespace rackwise
