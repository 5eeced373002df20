// The owners' guaranteed slices as a description's `ledger:` section gives them (rackwise/guaranteed_slices.h),
// for the ledger daemon (which enforces the rule) and the faces' link (whose fallback keeps to a slice).
#pragma once

#include "absl/status/statusor.h"
#include "rackwise/guaranteed_slices.h"
#include "rackwise/topology.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::ledger {

// Every share of `description.ledger()` (none: every owner's slice is 0). `topology` must be built from
// `description` and outlive the result. InvalidArgument for shares the description's checks would refuse.
absl::StatusOr<GuaranteedSlices> SlicesOfDescription(const Topology& topology,
                                                     const v1::ClusterDescription& description);

}  // namespace rackwise::ledger
