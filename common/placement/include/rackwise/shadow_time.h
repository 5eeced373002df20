// When a waiting job could start if the running jobs ended when their time limits say (EASY backfill's shadow
// time), and the rule a `preferred` job follows once its hold-out for the fewest NVLink domains has run out.
//
// A scheduler knows time limits, not true run times: faces pass each running allocation's expected end from its
// limit (Slurm's end_time; the simulator's trace has no limit column, so it uses the trace duration, a perfect
// estimate). A limit that overestimates only makes the answer later, never earlier than what actually happens.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_policy.h"
#include "rackwise/placement_request.h"

namespace rackwise {

// A running allocation (by its ledger id) and when it is expected to end, in seconds from now (>= 0).
struct ExpectedEnd {
  std::string id;
  double in_seconds = 0;
};

// Releases the allocations of `ends` (sorted by in_seconds) on `ledger` in that order, and after each distinct end
// time at which at least `gpus` GPUs are free (`free_gpus` are free now) asks `fits` whether the job could start
// on the ledger as it is then; stops at the first yes. The ledger is restored before returning (every released
// allocation is committed back as it was). Returns that end time, or nullopt if the job cannot start even when
// every listed allocation has ended. `fits` must not change the ledger.
absl::StatusOr<std::optional<double>> ShadowTime(Ledger& ledger, absl::Span<const ExpectedEnd> ends,
                                                 long long free_gpus, int gpus,
                                                 absl::FunctionRef<bool(const Ledger&, double at)> fits);

// When `request` could start inside its fewest NVLink domains (as `required`), in seconds from now: 0 if it can
// now, nullopt if not even when every allocation of `ends` has ended (or the request is malformed).
absl::StatusOr<std::optional<double>> FewestDomainsIn(Ledger& ledger, PlacementRequest request,
                                                      absl::Span<const ExpectedEnd> ends, long long free_gpus);

// The rule for `preferred` locality, the one every face and the simulator apply (through Placer::Place, which
// reads the request's waited_seconds, fewest_domains_in_seconds and time_limit_seconds): whether a job whose
// fewest NVLink domains are not free now holds out for them (is placed as `required`) rather than starting with
// the best it can get now. It waits only while waiting is cheaper than spreading: the expected wait for those
// domains (`fewest_in_seconds`, from the running jobs' time limits) is shorter than what a spread start would
// cost it, policy.spread_cost_fraction of its time limit. The decision is made afresh each time it is asked, so it
// follows the estimate as running jobs end early or others take the domains. preferred_wait_seconds, when set,
// bounds the wait: the job never waits past it in all (an expected wait that would end past it is not worth
// starting). A face that cannot estimate (no estimate, or no time limit) holds the job only for that bound, and
// not at all without one. spread_cost_fraction 0 (spreading costs nothing) never holds a job.
bool PreferredHoldsOut(const PlacementPolicy& policy, double waited_seconds, std::optional<double> fewest_in_seconds,
                       std::optional<double> time_limit_seconds);

// Whether PreferredHoldsOut could hold a job of `locality` that has waited `waited_seconds` if the face passed
// an estimate: when false, a face need not work one out (FewestDomainsIn walks the running jobs' ends).
bool PreferredWantsEstimate(const PlacementPolicy& policy, Locality locality, double waited_seconds);

}  // namespace rackwise
