// Internal to the placer: a request checked and resolved once (locality, node mask, node types to try), and the
// per-node verdict shared by Place's refusals, FilterNode and ScoreNode.
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_decision.h"
#include "rackwise/placement_request.h"

namespace rackwise::internal {

struct RequestSetup {
  Locality locality = Locality::kPreferred;
  std::vector<char> allowed;        // per node; empty: every node
  std::vector<NodeTypeId> types;    // node types the job may use, in description order
};

// InvalidArgument for malformed requests (see Placer::Place).
absl::StatusOr<RequestSetup> SetUpRequest(const Topology& topology, const PlacementRequest& request);

// Watts charged per GPU of this request on nodes of `type`.
Milliwatts PerGpuFor(const Topology& topology, const PlacementRequest& request, NodeTypeId type);

// Why node `n` cannot take any share of the request now, or nullopt if it could.
std::optional<NodeReason> NodeBlock(const Ledger& ledger, const PlacementRequest& request, const RequestSetup& setup,
                                    NodeId n);

}  // namespace rackwise::internal
