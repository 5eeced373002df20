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
  const double wait = policy.preferred_wait_seconds;
  if (waited_seconds < wait) return true;
  // No hold-out asked for (the default 0): the best it can get now, as the contract says.
  if (!(wait > 0) || !fewest_in_seconds) return false;  // not known, or not by the running jobs' ends: spread now
  // Soon: a second hold-out's worth, or, for a job that says how long it runs, its own time limit past the
  // hold-out (waiting at most about doubles its time to finish, while spreading would stretch every second of
  // its run). Counted from reaching the head, so that estimates that keep slipping (the domains taken by others
  // meanwhile) cannot hold the job out for ever.
  const double extra = std::max(wait, time_limit_seconds.value_or(0));
  return waited_seconds + *fewest_in_seconds <= wait + extra;
}

}  // namespace rackwise
