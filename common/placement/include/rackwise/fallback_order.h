// What a face offers a resource manager that picks GPUs its own way (Slurm's cons_tres chooses within a node
// set; it cannot be handed exact GPU indices for every job shape), once the Placer has decided. The core owns
// the order of preference; the face only tries the sets in turn and checks what the resource manager picked
// against the caps (start_guard.h). Also the backfill hold-out, which the simulator's backfill applies too.
#pragma once

#include <vector>

#include "rackwise/placement_decision.h"
#include "rackwise/placement_policy.h"
#include "rackwise/placement_request.h"
#include "rackwise/topology.h"

namespace rackwise {

// A `preferred` job started ahead of its turn (by a backfill scheduler) only takes its fewest NVLink domains:
// spreading it then would fragment the domains the jobs ahead of it wait for. In its turn the usual rule
// (PreferredHoldsOut) applies. True when `request`, started that way, must be treated as `required`.
bool BackfillHoldsOut(const PlacementRequest& request, bool started_by_backfill, const PlacementPolicy& policy);

// The node sets to offer, most preferred first: the decision's nodes; then every node of the NVLink domains it
// uses; unless the job requires locality, every node of the racks it uses, then every node in `allowed` (the
// nodes the job may use at all). Each set is sorted; a set equal to the one before it, or empty, is left out.
std::vector<std::vector<NodeId>> FallbackNodeSets(const Topology& topology, const PlacementDecision& decision,
                                                  Locality locality, const std::vector<NodeId>& allowed);

}  // namespace rackwise
