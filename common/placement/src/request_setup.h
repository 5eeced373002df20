// Internal to the placer: a request checked and resolved once (locality, node mask, node types to try), and the
// per-node verdict shared by Place's refusals, FilterNode and ScoreNode.
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_decision.h"
#include "rackwise/placement_request.h"

namespace rackwise::internal {

struct RequestSetup {
  Locality locality = Locality::kPreferred;
  // A `preferred` job started by backfill that does not hold out (BackfillHoldsOut): on the node types that can
  // give its fewest domains it is placed as `required`; it may spread only over the others.
  bool fewest_types_required = false;
  std::vector<char> allowed;      // per node; empty: every node
  std::vector<NodeTypeId> types;  // node types the job may use, in description order
  // Per node, where the request names eligible nodes (empty: every node); `has_eligible` false: the allowed mask
  // stands for them.
  std::vector<char> eligible_mask;
  bool has_eligible = false;
  // The nodes over which `required`'s fewest domains are counted (type_minimum.h).
  const std::vector<char>& eligible() const { return has_eligible ? eligible_mask : allowed; }
};

// The locality the placer applies: the request's (else the policy's default), `required` while a preferred job
// holds out for its fewest domains (PreferredHoldsOut). The only use the placer makes of the request's waited,
// fewest-domains-in and time-limit seconds. InvalidArgument when one of them is not finite (or negative).
absl::StatusOr<Locality> EffectiveLocality(const PlacementPolicy& policy, const PlacementRequest& r);
// RequestSetup::fewest_types_required, for a request whose EffectiveLocality is `locality`.
bool FewestTypesRequired(const PlacementRequest& r, Locality locality);

// InvalidArgument for malformed requests (see Placer::Place).
absl::StatusOr<RequestSetup> SetUpRequest(const Topology& topology, const PlacementRequest& request);

// Watts charged per GPU of this request on nodes of `type`.
Milliwatts PerGpuFor(const Topology& topology, const PlacementRequest& request, NodeTypeId type);

// Why node `n` cannot take any share of the request now, or nullopt if it could.
std::optional<NodeReason> NodeBlock(const Ledger& ledger, const PlacementRequest& request, const RequestSetup& setup,
                                    NodeId n);

// The power room of a rack for checking many of its nodes at once: the rack's own room and the least room of
// the power domains above it (both after the policy's reserve).
struct RackPowerRoom {
  Milliwatts rack = 0;
  Milliwatts chain = 0;
};
RackPowerRoom PowerRoomOf(const Ledger& ledger, RackId rack);

// NodeBlock with the rack's power room worked out beforehand: the same verdict, for batch callers
// (FilterNodes, ScoreNodes) that see every node of a rack.
std::optional<NodeReason> NodeBlockInRack(const Ledger& ledger, const PlacementRequest& request,
                                          const RequestSetup& setup, NodeId n, const RackPowerRoom& room);

// Verdicts for many nodes, sharing each rack's power room; `out` gets one per node, kNotAllowed for unknown ids.
void NodeBlocks(const Ledger& ledger, const PlacementRequest& request, const RequestSetup& setup,
                absl::Span<const NodeId> nodes, std::vector<std::optional<NodeReason>>* out);

}  // namespace rackwise::internal
