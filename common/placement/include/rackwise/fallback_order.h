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

// A `preferred` job started ahead of its turn (by a backfill scheduler; request.started_by_backfill) holds out for
// its fewest NVLink domains by the usual rule (PreferredHoldsOut: while the expected wait costs less than
// spreading), except that with no estimate to weigh it holds out for as long as the rule could hold it at all: it
// has no reservation to fall back on. When it does not hold out, it still takes only its fewest domains on the
// node types that can give them, since those are the domains the jobs ahead of it wait for; it may spread only
// over the other types, where it takes no domain a job of its shape could use whole (the placer applies that).
// True when `request` must be treated as `required` everywhere.
bool BackfillHoldsOut(const PlacementRequest& request, const PlacementPolicy& policy);
// Whether BackfillHoldsOut's rule applies to `request` at all: a `preferred` job (as asked, else by the policy's
// default) started by backfill.
bool UnderBackfillRule(const PlacementRequest& request, const PlacementPolicy& policy);

// The node sets to offer, most preferred first: the decision's nodes; then every node of the NVLink domains it
// uses; unless the job requires locality, every node of the racks it uses, then every node in `allowed` (the
// nodes the job may use at all). Each set is sorted; a set equal to the one before it, or empty, is left out.
std::vector<std::vector<NodeId>> FallbackNodeSets(const Topology& topology, const PlacementDecision& decision,
                                                  Locality locality, const std::vector<NodeId>& allowed);

}  // namespace rackwise
