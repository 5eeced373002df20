// The placement core: given an immutable view of the cluster (Topology + Ledger) and a request, returns a
// decision or a refusal. Pure: no I/O, no clock, no randomness, no mutation of the ledger (commit is the
// caller's step, as Reserve is in kube-scheduler).
//
// Objectives, in order:
//  1. never exceed a power cap (less the policy's reserve) and never use unhealthy hardware;
//  2. fewest NVLink domains (a job that fits in one domain gets one); `required` waits for the fewest over every
//     node type it may use (FewestDomains);
//  3. fewest scalable units, then fewest racks;
//  4. rail alignment (the same GPU indices on every node of a partial-node multi-node job);
//  5. best fit, so that whole domains stay free for large jobs; across node types too (a job one domain holds
//     takes the domain, of any type, with the fewest GPUs left free, then the smaller domain).
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_decision.h"
#include "rackwise/placement_request.h"

namespace rackwise {

class Placer {
 public:
  // Malformed requests (gpus < 1, gpus_per_node not dividing gpus, watts outside the policy's limits,
  // unknown ids) are InvalidArgument; everything else is a PlacementOutcome.
  static absl::StatusOr<PlacementOutcome> Place(const Ledger& ledger, const PlacementRequest& request);

  // Per-node reason a node cannot take any share of the request right now, or nullopt if it could.
  // Used for kube-scheduler's FailedNodes and for `rackwise explain`.
  static std::optional<NodeReason> FilterNode(const Ledger& ledger, const PlacementRequest& request, NodeId node);

  // 0..10: how good a node is for this request on its own (domain and rack packing, rail alignment, power
  // headroom, weighted by the policy). 0 for nodes FilterNode rejects. ScoreNodes ranks candidates against
  // each other with Place on top of this.
  static int ScoreNode(const Ledger& ledger, const PlacementRequest& request, NodeId node);

  // The same for many nodes at once, checking the request once (what kube-scheduler's filter and prioritize
  // verbs need for thousands of nodes per pod). `out` gets one entry per node; kNoId entries are kNotAllowed / 0.
  // A malformed request is the InvalidArgument Place would return (and every node kNotAllowed), so that faces
  // can say what is wrong with it instead of repeating the core's checks.
  static absl::Status FilterNodes(const Ledger& ledger, const PlacementRequest& request, absl::Span<const NodeId> nodes,
                                  std::vector<std::optional<NodeReason>>* out);
  // Whether a request is well formed (the checks Place starts with): OK or InvalidArgument saying what is wrong.
  static absl::Status CheckRequest(const Topology& topology, const PlacementRequest& request);
  // Scores for kube-scheduler's prioritize verb, one per node (0 for nodes FilterNodes rejects), such that its
  // best node is where Place would put the job: the nodes Place picks among `nodes` score 10, the other nodes of
  // their NVLink domains ScoreNode but at most 9, every other node ScoreNode but at most 8.
  static void ScoreNodes(const Ledger& ledger, const PlacementRequest& request, absl::Span<const NodeId> nodes,
                         std::vector<int>* out);

  // The fewest NVLink domains the job could ever be given, over every node type it may use, under the
  // described caps less the reserve (what `required` waits for), and the first type that gives it;
  // {0, kNoId} when no type can ever hold the job.
  struct Fewest {
    int domains = 0;
    NodeTypeId type = kNoId;
    std::vector<NodeTypeId> types;  // every type that gives it, in description order (the only ones `required` takes)
    std::string reason;  // "the fewest NVLink domains this cluster can give 64 GPUs is 1, on gb200-tray (...)"
  };
  static absl::StatusOr<Fewest> FewestDomains(const Ledger& ledger, const PlacementRequest& request);
};

}  // namespace rackwise
