// Shadow times and the `preferred` hold-out rule. See rackwise/shadow_time.h.
#include "rackwise/shadow_time.h"

#include <algorithm>
#include <variant>

#include "rackwise/placer.h"

namespace rackwise {

absl::StatusOr<std::optional<double>> ShadowTime(Ledger& ledger, absl::Span<const ExpectedEnd> ends,
                                                 long long free_gpus, int gpus,
                                                 absl::FunctionRef<bool(const Ledger&, double at)> fits) {
  std::optional<double> found;
  if (free_gpus >= gpus && fits(ledger, 0)) return 0.0;
  std::vector<Allocation> released;
  for (size_t i = 0; i < ends.size(); ++i) {
    const Allocation* a = ledger.Find(ends[i].id);
    if (a == nullptr) continue;
    free_gpus += a->gpu_count();
    released.push_back(*a);
    ledger.Release(ends[i].id);
    // Jobs that end together free their GPUs together: ask once, after the last of them.
    if (free_gpus < gpus || (i + 1 < ends.size() && ends[i + 1].in_seconds == ends[i].in_seconds)) continue;
    if (fits(ledger, ends[i].in_seconds)) {
      found = ends[i].in_seconds;
      break;
    }
  }
  // Restore in reverse, so that the ledger holds exactly what it held (kRecover: caps lowered meanwhile do not
  // refuse what already ran).
  for (auto a = released.rbegin(); a != released.rend(); ++a) {
    if (absl::Status s = ledger.Commit(*a, CommitMode::kRecover); !s.ok()) return s;
  }
  return found;
}

absl::StatusOr<std::optional<double>> FewestDomainsIn(Ledger& ledger, PlacementRequest request,
                                                      absl::Span<const ExpectedEnd> ends, long long free_gpus) {
  if (absl::Status bad = Placer::CheckRequest(ledger.topology(), request); !bad.ok()) return bad;
  request.locality = Locality::kRequired;
  request.report_refusal = false;
  request.fewest_domains_in_seconds.reset();
  return ShadowTime(ledger, ends, free_gpus, request.gpus, [&](const Ledger& l, double) {
    absl::StatusOr<PlacementOutcome> out = Placer::Place(l, request);
    return out.ok() && std::holds_alternative<PlacementDecision>(*out);
  });
}

bool PreferredHoldsOut(const PlacementPolicy& policy, double waited_seconds, std::optional<double> fewest_in_seconds,
                       std::optional<double> time_limit_seconds) {
  if (!(policy.spread_cost_fraction > 0)) return false;  // spreading costs nothing: never worth a wait
  const std::optional<double> bound = policy.preferred_wait_seconds;
  if (bound && !(waited_seconds < *bound)) return false;
  // Not known (the face cannot tell, or not by the running jobs' ends; or no time limit to weigh): only the
  // administrator's bound can say how long waiting is worth.
  if (!fewest_in_seconds || !time_limit_seconds) return bound.has_value();
  // Waiting ends in the fewest domains `fewest_in` from now and runs for the limit; spreading starts now and runs
  // for the limit stretched by the cost. Sunk waiting does not enter: only what is still ahead is compared.
  const double spread_cost = policy.spread_cost_fraction * *time_limit_seconds;
  if (!(*fewest_in_seconds < spread_cost)) return false;
  return !bound || waited_seconds + *fewest_in_seconds <= *bound;
}

bool PreferredWantsEstimate(const PlacementPolicy& policy, Locality locality, double waited_seconds) {
  if (locality != Locality::kPreferred || !(policy.spread_cost_fraction > 0)) return false;
  return !policy.preferred_wait_seconds || waited_seconds < *policy.preferred_wait_seconds;
}

}  // namespace rackwise
