// Internal to the placer: the candidate domains of a multi-domain search, largest first, and what they bound.
// Collecting them is the part of a decision that could grow with the cluster, so it is bounded: it stops a
// little past "enough GPUs" (see CollectCandidates), and asks the power groups (CapacityNowAtMost) before it
// would visit every domain to learn that nothing fits.
#pragma once

#include <limits>
#include <optional>
#include <vector>

#include "placement_context.h"

namespace rackwise::internal {

struct Candidate {
  DomainId domain;
  int cap;  // what it can give the job now (DomainCapacity)
};

// The largest free count a domain of the job's type can have: the first bucket a search looks at.
inline int MaxBucket(const PlacementContext& ctx) { return ctx.topology().max_domain_gpus(ctx.type()); }

// Whether the job is placed on node-scope domains a share of k < all of a node's GPUs each: the search then
// prefers scopes whose nodes share a free rail set (rail_set.h).
bool RailJob(const PlacementContext& ctx);

// Whether the GPUs the power domains can power add up to the job (CapacityNowAtMost, O(power domains) where a
// cap binds): asked at most once per plan, and only where a search would otherwise visit every domain to learn
// that it cannot (a capped cluster near its limit has thousands of domains with no power to give).
class CapacityGate {
 public:
  explicit CapacityGate(const PlacementContext& ctx) : ctx_(ctx) {}
  bool MayFit();

 private:
  const PlacementContext& ctx_;
  std::optional<bool> may_fit_;
};

// Candidates from the buckets: largest domains first (or smallest, for locality none). Unless `exhaustive`,
// stops once they add up to the job (plus, for required and preferred, a bounded number more, fewer once
// NarrowScopeWatch settles). `*skipped_max` is the most a domain left out could offer (0 when none was left out).
// Returns nothing (sum 0, nothing skipped) when the gate says the job cannot fit.
std::vector<Candidate> CollectCandidates(const PlacementContext& ctx, bool exhaustive, CapacityGate* gate,
                                         long long* sum, int* skipped_max);

// The fewest domains any plan could use if every skipped domain offered `skipped_max` (0: none was skipped) and
// no cap shared by domains bound: a plan with this many is the fewest there are. kNever when even that falls short.
constexpr int kNever = std::numeric_limits<int>::max();
int CountBound(const PlacementContext& ctx, const std::vector<Candidate>& cands, int skipped_max);

}  // namespace rackwise::internal
