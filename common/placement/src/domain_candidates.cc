// Collects the candidates of a multi-domain search. See domain_candidates.h.
#include "domain_candidates.h"

#include <algorithm>
#include <functional>

#include "capacity_now.h"
#include "placement_indexes.h"
#include "stamped_map.h"

namespace rackwise::internal {
namespace {

// How many candidates past "enough GPUs" the multi-domain search keeps, to find ones that share a rack or SU.
constexpr int kExtraCandidates = 512;
// It stops sooner once this many racks (or scalable units) among them hold the job in as few domains as the
// candidates needed: the scope search then picks the tightest of those.
constexpr int kNarrowScopesToCompare = 4;
// When a search asks the gate: after a few domains with no power for the job (a capped cluster at its limit,
// where the next thousands would be the same), or after more domains than most jobs need, all short of the job.
constexpr int kStarvedBeforeCapacityGate = 4;
constexpr int kVisitsBeforeCapacityGate = 64;

// Scope levels: a rack (of several domains), a scalable unit, the cluster.
constexpr int kRackLevel = 0, kScalableUnitLevel = 1, kClusterLevel = 2;

// The narrowest scope the search could ever offer this job (GroupScopes): a rack of several of its domains,
// else one scalable unit of several, else only the cluster.
int NarrowestLevel(const PlacementContext& ctx) {
  const Topology& t = ctx.topology();
  if (t.max_multi_domain_rack_gpus(ctx.type()) >= ctx.gpus()) return kRackLevel;
  if (t.scalable_units().size() > 1 && t.max_scalable_unit_gpus(ctx.type()) >= ctx.gpus()) return kScalableUnitLevel;
  return kClusterLevel;
}

// Watches the candidates as they are collected, largest first, for racks (or scalable units) at the narrowest
// level that hold the job in no more domains than all the candidates needed to: once kNarrowScopesToCompare do,
// more candidates cannot make the plan narrower, only offer more of the same to compare. Not used for the cluster
// level, whose extra candidates decide which scalable units a plan spans.
class NarrowScopeWatch {
 public:
  // Rail jobs keep every extra candidate: the scope search compares their scopes' rail sets too.
  explicit NarrowScopeWatch(const PlacementContext& ctx)
      : ctx_(ctx), level_(RailJob(ctx) ? kClusterLevel : NarrowestLevel(ctx)), running_(ThreadRunning()) {
    const Topology& t = ctx.topology();
    running_.Reset(level_ == kRackLevel ? t.racks().size() : t.scalable_units().size());
  }
  // `c` is the `count`-th candidate, and the candidates so far offer `sum`.
  void Add(const Candidate& c, int count, long long sum) {
    if (level_ == kClusterLevel) return;
    if (needed_ == 0 && sum >= ctx_.gpus()) needed_ = count;
    const Topology& t = ctx_.topology();
    const RackId rack = t.domains()[c.domain].rack;
    Running& scope = running_[level_ == kRackLevel ? rack : t.racks()[rack].scalable_unit];
    const bool held = scope.total >= ctx_.gpus();
    scope.total += c.cap;
    scope.domains++;
    if (!held && scope.total >= ctx_.gpus() && scope.domains > 1 && needed_ > 0 && scope.domains <= needed_) ++settled_;
  }
  bool Settled() const { return settled_ >= kNarrowScopesToCompare; }

 private:
  struct Running {
    long long total = 0;
    int domains = 0;
  };
  const PlacementContext& ctx_;
  const int level_;
  int needed_ = 0;  // the candidates it took to reach the job (0: not yet)
  int settled_ = 0;
  // Per rack or scalable unit; the thread's (stamped_map.h), one watch at a time: a collection starts no other.
  StampedMap<Running>& running_;

  static StampedMap<Running>& ThreadRunning() {
    thread_local StampedMap<Running> running;
    return running;
  }
};

}  // namespace

bool RailJob(const PlacementContext& ctx) {
  const NodeType& type = ctx.topology().node_types()[ctx.type()];
  return ctx.k() > 0 && ctx.k() < type.gpus && type.nvlink == NvlinkScope::kNode;
}

bool CapacityGate::MayFit() {
  if (!may_fit_)
    may_fit_ = ctx_.restricted() || CapacityNowAtMost(ctx_.ledger(), ctx_.request(), ctx_.type()) >= ctx_.gpus();
  return *may_fit_;
}

// Candidates from the buckets: largest domains first (or smallest, for locality none). Unless `exhaustive`,
// stops once they add up to the job (plus, for required and preferred, a bounded number more, fewer once
// NarrowScopeWatch settles). `*skipped_max` is the most a domain left out could offer (0 when none was left out).
// Returns nothing (sum 0, nothing skipped) when the gate says the job cannot fit.
std::vector<Candidate> CollectCandidates(const PlacementContext& ctx, bool exhaustive, CapacityGate* gate,
                                         long long* sum, int* skipped_max) {
  const int g = ctx.gpus();
  const int max_f = MaxBucket(ctx);
  const bool fragments_first = ctx.locality() == Locality::kNone;
  // A domain left out of bucket f offers at most f, and at most what the best-powered rack can power: on a
  // capped cluster that keeps the bound below (CountBound) from sending the search over every domain when the
  // first candidates already give the fewest.
  const int most_powered = ctx.MostPowerGpus();
  auto at_most = [&](int f) { return ctx.RoundDown(std::min(f, most_powered)); };
  std::vector<Candidate> cands;
  cands.reserve(64);  // a search that stops early holds a few dozen; growing from one cost a tenth of it
  *sum = 0;
  int extra = 0;
  bool enough = false;
  *skipped_max = 0;
  NarrowScopeWatch watch(ctx);
  int visited = 0, starved = 0;
  // Past "enough" GPUs: for locality none at once; else after kExtraCandidates more, or once the watch settles.
  auto had_enough = [&] {
    return !exhaustive && *sum >= g && (fragments_first || extra > kExtraCandidates || watch.Settled());
  };
  for (int step = 0; step < max_f; ++step) {
    const int f = fragments_first ? step + 1 : max_f - step;
    if (enough) {
      if (!IndexesOf(ctx.ledger()).DomainsWithFree(ctx.type(), f).empty())
        *skipped_max = at_most(fragments_first ? max_f : f);
      if (*skipped_max > 0) break;
      continue;
    }
    for (DomainId d : IndexesOf(ctx.ledger()).DomainsWithFree(ctx.type(), f)) {
      const int cap = ctx.DomainCapacity(d);
      if (*sum < g) {
        const bool ask =
            ++visited == kVisitsBeforeCapacityGate || (cap <= 0 && ++starved == kStarvedBeforeCapacityGate);
        if (ask && !gate->MayFit()) {
          *sum = 0;
          *skipped_max = 0;
          return {};
        }
      }
      if (cap <= 0) continue;
      cands.push_back({d, cap});
      *sum += cap;
      if (!exhaustive) watch.Add(cands.back(), static_cast<int>(cands.size()), *sum);
      if (!exhaustive && *sum >= g) ++extra;
      if (had_enough()) {
        *skipped_max = at_most(f);  // the rest of this bucket
        break;
      }
    }
    // Past "enough", smaller buckets still give the tightest-first order partly used domains to choose from.
    enough = had_enough();
  }
  return cands;
}

int CountBound(const PlacementContext& ctx, const std::vector<Candidate>& cands, int skipped_max) {
  std::vector<int> caps;
  caps.reserve(cands.size());
  for (const Candidate& c : cands) caps.push_back(c.cap);
  std::sort(caps.begin(), caps.end(), std::greater<int>());
  long long got = 0;
  int n = 0;
  for (size_t i = 0; got < ctx.gpus(); ++n) {
    const bool listed = i < caps.size() && caps[i] >= skipped_max;
    if (!listed && skipped_max <= 0) return kNever;
    got += listed ? caps[i++] : skipped_max;
  }
  return n;
}

}  // namespace rackwise::internal
