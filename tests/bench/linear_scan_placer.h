// The baselines every placement benchmark is compared with, measured in the same run:
//  - LinearScanBestFit: the same objective as rackwise (the tightest single NVLink domain that holds the job,
//    under the rack's power), found the plain way, by scanning every node of the cluster for every decision;
//    jobs larger than a domain take domains in scan order.
//  - LinearScanFirstFit: what a simple scheduler does: take free GPUs in node order until the job is covered.
#pragma once

#include <optional>
#include <vector>

#include "rackwise/ledger.h"
#include "rackwise/placement_request.h"

namespace rackwise::bench {

std::optional<std::vector<NodeGpus>> LinearScanBestFit(const Ledger& ledger, const PlacementRequest& request);
std::optional<std::vector<NodeGpus>> LinearScanFirstFit(const Ledger& ledger, const PlacementRequest& request);

}  // namespace rackwise::bench
