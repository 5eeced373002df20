// Internal to the placer: the refusal for a job that cannot start, with every node counted under one reason
// and one sentence on the constraint that binds (kube-scheduler style: "0/512 nodes are available: ...").
#pragma once

#include "rackwise/placement_decision.h"
#include "request_setup.h"
#include "type_minimum.h"

namespace rackwise::internal {

// `locality_blocked` (null if not): the GPUs exist but not within the fewest NVLink domains over the job's node
// types, and the job requires that. Without a node list, nodes are counted rack by rack from the ledger's
// tallies; `by_node` visits every node instead (the reference the tests compare the tallies against).
PlacementRefusal BuildRefusal(const Ledger& ledger, const PlacementRequest& request, const RequestSetup& setup,
                              const TypeMinimum* locality_blocked, bool by_node = false);

}  // namespace rackwise::internal
