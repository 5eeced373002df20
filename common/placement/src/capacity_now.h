// Internal to the placer: how many GPUs of one node type a job could get now (free, on healthy nodes, with power
// to run them), worked out from the ledger's power groups instead of a visit to every rack. Requests without a
// node list only: the groups know nothing of one.
#pragma once

#include "rackwise/ledger.h"
#include "rackwise/placement_request.h"

namespace rackwise::internal {

// Exactly what PowerLimitedGpus gives over every rack's shares of the job (the refusal's "at most N now"). O(1)
// where no cap can bind (the ledger's least rooms power every free GPU); else visits the racks of a group only
// where one of their own rooms could bind.
long long CapacityNow(const Ledger& ledger, const PlacementRequest& request, NodeTypeId type);

// An upper bound on CapacityNowAtMost in O(root power domains): the free shares, or what the power domains under
// none can pass. The placer skips the searches of a type whose bound is short of the job.
long long CapacityNowAtMostByRoots(const Ledger& ledger, const PlacementRequest& request, NodeTypeId type);

// An upper bound on CapacityNow: every rack's own room is left out, and so are the power domains when the type's
// free shares alone fall short of the job or no domain can bind (O(1)); else O(power domains x GPUs per node).
// The multi-domain search asks it before it would visit every domain; it could not succeed below the job.
long long CapacityNowAtMost(const Ledger& ledger, const PlacementRequest& request, NodeTypeId type);

}  // namespace rackwise::internal
