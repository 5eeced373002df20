// Chooses NVLink domains for a job. See domain_planner.h.
#include "domain_planner.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>

#include "absl/container/inlined_vector.h"
#include "domain_candidates.h"
#include "fewest_domains.h"
#include "placement_indexes.h"
#include "rail_set.h"
#include "stamped_map.h"

namespace rackwise::internal {
namespace {

// How many domains of one bucket the single-domain search compares before it settles: enough for a good
// tie-break, few enough that a decision stays O(1) in the size of the cluster.
constexpr int kExaminePerBucket = 32;
// How many scopes the multi-domain search checks for a shared rail set (rail_set.h) before it settles for the
// tightest.
constexpr int kRailScopeChecks = 64;
// Room kept for a plan's domain takes before the first: most multi-domain plans take two to four.
constexpr size_t kTakesReserved = 8;

// Higher is better: racks already in use (keeps whole racks free), and power left after the placement.
double TieBreakScore(const PlacementContext& ctx, DomainId d, int gpus) {
  const Topology& t = ctx.topology();
  const RackId r = t.domains()[d].rack;
  const Ledger& l = ctx.ledger();
  const Milliwatts cap = std::max<Milliwatts>(1, l.rack_cap(r));
  const double used = static_cast<double>(l.rack_draw(r) - t.racks()[r].idle) / static_cast<double>(cap);
  const double left =
      static_cast<double>(ctx.RackRoom(r) - static_cast<Milliwatts>(gpus) * ctx.per_gpu()) / static_cast<double>(cap);
  const PlacementWeights& w = t.policy().weights;
  return w.rack_packing * used + w.power_headroom * left;
}

struct GreedyResult {
  std::vector<DomainTake> takes;
  int got = 0;
};

// Takes GPUs from candidates in order until the job is covered, spending shared power as it goes.
GreedyResult Greedy(const PlacementContext& ctx, const std::vector<Candidate>& order, PowerScratch* scratch) {
  GreedyResult out;
  // A plan takes a few domains: one allocation instead of growing from one.
  out.takes.reserve(std::min<size_t>(order.size(), kTakesReserved));
  scratch->Clear();
  const Topology& t = ctx.topology();
  for (const Candidate& c : order) {
    if (out.got >= ctx.gpus()) break;
    const RackId r = t.domains()[c.domain].rack;
    int take = std::min({c.cap, ctx.gpus() - out.got, ctx.PowerGpus(r, scratch)});
    take = ctx.RoundDown(take);
    if (take <= 0) continue;
    scratch->Add(t.racks()[r], r, static_cast<Milliwatts>(take) * ctx.per_gpu());
    out.takes.push_back({c.domain, take});
    out.got += take;
  }
  return out;
}

void SortByCapacity(std::vector<Candidate>* v) {
  std::stable_sort(v->begin(), v->end(), [](const Candidate& a, const Candidate& b) { return a.cap > b.cap; });
}

// Best fit across domains: `members` reordered so that the first `slots` are the tightest set that covers `g`
// (each slot takes the smallest domain that, with the largest of the others, still covers what is left), then
// the rest in their order. Largest-first alone would break into whole domains that a later large job needs and
// leave the partly used ones behind. Ties keep the members' order (their rack and scalable-unit preference).
std::vector<Candidate> TightestFirst(const std::vector<Candidate>& members, int g, int slots) {
  // Scopes hold tens of candidates: no heap allocation for the working lists.
  absl::InlinedVector<int, 64> asc(members.size());
  for (size_t i = 0; i < asc.size(); ++i) asc[i] = static_cast<int>(i);
  // Ties by index: the order a stable sort would keep, without its heap buffer.
  std::sort(asc.begin(), asc.end(),
            [&](int a, int b) { return members[a].cap != members[b].cap ? members[a].cap < members[b].cap : a < b; });
  absl::InlinedVector<bool, 64> taken(members.size(), false), in_top(members.size(), false);
  std::vector<Candidate> out;
  out.reserve(members.size());
  long long need = g;
  for (int s = slots; s > 0 && need > 0; --s) {
    // The s - 1 largest untaken (their sum) and the s-th largest, which stands in when one of them is picked.
    long long top = 0;
    int counted = 0, boundary = -1;
    in_top.assign(members.size(), false);
    for (auto it = asc.rbegin(); it != asc.rend(); ++it) {
      if (taken[*it]) continue;
      if (counted == s - 1) {
        boundary = *it;
        break;
      }
      top += members[*it].cap;
      in_top[*it] = true;
      ++counted;
    }
    int pick = -1;
    for (int i : asc) {
      if (taken[i]) continue;
      const long long others = in_top[i] ? top - members[i].cap + (boundary >= 0 ? members[boundary].cap : 0) : top;
      if (members[i].cap + others >= need) {
        pick = i;
        break;
      }
    }
    if (pick < 0) break;  // the caps alone cannot cover it in this many slots: keep the given order
    taken[pick] = true;
    out.push_back(members[pick]);
    need -= members[pick].cap;
  }
  for (size_t i = 0; i < members.size(); ++i)
    if (!taken[i]) out.push_back(members[i]);
  return out;
}

}  // namespace

std::optional<DomainPlan> PlanSingleDomain(const PlacementContext& ctx, bool partly_used_only) {
  const int g = ctx.gpus();
  if (g > ctx.EffectiveDomainSize()) return std::nullopt;
  const int max_f = MaxBucket(ctx);
  for (int f = g; f <= max_f; ++f) {
    DomainId best = kNoId;
    double best_score = 0;
    int examined = 0;
    for (DomainId d : IndexesOf(ctx.ledger()).DomainsWithFree(ctx.type(), f)) {
      if (partly_used_only && ctx.ledger().domain_free_gpus(d) >= ctx.topology().domains()[d].gpus) continue;
      if (ctx.DomainCapacity(d) < g) continue;
      const double score = TieBreakScore(ctx, d, g);
      if (best == kNoId || score > best_score + 1e-12 || (score > best_score - 1e-12 && d < best)) {
        best = d;
        best_score = score;
      }
      if (++examined >= kExaminePerBucket) break;
    }
    if (best != kNoId) {
      DomainPlan plan;
      plan.takes.push_back({best, g});
      plan.rail_set = ChooseRailSet(ctx, ctx.topology().domains()[best].nodes).set;
      return plan;
    }
  }
  return std::nullopt;
}

namespace {

// `fewest_possible`: a lower bound on the domains of any plan (CountBound), which lets the scope search stop
// at the first scope that reaches it.
std::optional<DomainPlan> PlanFromCandidates(const PlacementContext& ctx, std::vector<Candidate> cands, long long sum,
                                             int fewest_possible, PowerScratch* scratch);

}  // namespace

std::optional<DomainPlan> PlanMultiDomain(const PlacementContext& ctx, PowerScratch* scratch) {
  long long sum = 0;
  int skipped_max = 0;
  CapacityGate gate(ctx);
  std::vector<Candidate> cands = CollectCandidates(ctx, /*exhaustive=*/false, &gate, &sum, &skipped_max);
  if (sum < ctx.gpus() && skipped_max == 0) return std::nullopt;  // not enough even without shared limits
  const int bound = CountBound(ctx, cands, skipped_max);
  std::optional<DomainPlan> plan = PlanFromCandidates(ctx, std::move(cands), sum, bound, scratch);
  const bool fragments_first = ctx.locality() == Locality::kNone;  // any count will do: only look further if none
  const bool fewest = plan && static_cast<int>(plan->takes.size()) <= bound;
  if (skipped_max == 0 || (plan && fragments_first) || fewest) return plan;
  // Power shared by racks and rows made the first candidates fall short, or a domain left out might do
  // with fewer: look at every domain, unless the power domains cannot power the job at all.
  if (!gate.MayFit()) return plan;
  cands = CollectCandidates(ctx, /*exhaustive=*/true, &gate, &sum, &skipped_max);
  const int bound_over_all = CountBound(ctx, cands, 0);
  std::optional<DomainPlan> all = PlanFromCandidates(ctx, std::move(cands), sum, bound_over_all, scratch);
  if (all && (!plan || all->takes.size() < plan->takes.size())) return all;
  return plan;
}

namespace {

// Largest first within a scope (`members` sorted by capacity), unless the power shared by racks and rows makes
// that take more domains than the capacities alone would need: then the exact fewest (fewest_domains.h), moved
// to the front of `members` so that the later passes (tightest first, rail sets) start from them.
GreedyResult PlanScope(const PlacementContext& ctx, std::vector<Candidate>* members, PowerScratch* scratch) {
  GreedyResult r = Greedy(ctx, *members, scratch);
  long long got = 0;
  size_t by_caps = 0;
  while (by_caps < members->size() && got < ctx.gpus()) got += (*members)[by_caps++].cap;
  if (r.got >= ctx.gpus() && r.takes.size() <= by_caps) return r;
  std::vector<DomainOffer> offers;
  offers.reserve(members->size());
  for (const Candidate& c : *members) offers.push_back({c.domain, c.cap});
  const FewestDomains exact = FindFewestDomains(
      ctx.topology(), offers, ctx.gpus(), [&](RackId k) { return ctx.RackGpus(k); },
      [&](PowerDomainId p) { return ctx.PowerDomainGpus(p); });
  if (exact.count == 0 || (r.got >= ctx.gpus() && static_cast<int>(r.takes.size()) <= exact.count)) return r;
  std::vector<Candidate> order;
  order.reserve(members->size());
  std::vector<int> member_of(ctx.topology().domains().size(), -1);
  for (size_t i = 0; i < members->size(); ++i) member_of[(*members)[i].domain] = static_cast<int>(i);
  for (DomainId d : exact.domains) {
    order.push_back((*members)[member_of[d]]);
    member_of[d] = -1;
  }
  for (const Candidate& c : *members)
    if (member_of[c.domain] >= 0) order.push_back(c);
  *members = std::move(order);
  return Greedy(ctx, *members, scratch);  // every greedy order of a set reaches what the caps let it give
}

// The rail set over every node of the chosen domains (the nodes are picked inside them afterwards).
GpuMask RailSetOfTakes(const PlacementContext& ctx, const std::vector<DomainTake>& takes) {
  size_t count = 0;
  for (const DomainTake& take : takes) count += ctx.topology().domains()[take.domain].nodes.size();
  std::vector<NodeId> nodes;
  nodes.reserve(count);
  for (const DomainTake& take : takes)
    for (NodeId n : ctx.topology().domains()[take.domain].nodes) nodes.push_back(n);
  return ChooseRailSet(ctx, nodes).set;
}

// The rail set over the nodes of node-scope domains `members` (one node each).
RailChoice RailSetOfMembers(const PlacementContext& ctx, const std::vector<Candidate>& members) {
  std::vector<NodeId> nodes;
  nodes.reserve(members.size());
  for (const Candidate& c : members) nodes.push_back(ctx.topology().domains()[c.domain].nodes.front());
  return ChooseRailSet(ctx, nodes);
}

// A set of candidates a plan may stay within: one rack (node-scope types have several domains per rack), one
// scalable unit, or the cluster.
struct Scope {
  int level;  // 0 rack, 1 scalable unit, 2 cluster
  std::vector<Candidate> members;
  long long total = 0;
  std::optional<RailChoice> rails;  // its nodes' rail set, once asked (rail jobs only)
};

// The candidates' totals per rack and per scalable unit, in maps emptied in O(1) (stamped_map.h): a search
// usually holds a few dozen candidates out of thousands of racks. The maps are the thread's, reused by every
// search on it (one at a time: a search never starts another).
struct ScopeTotals {
  struct Total {
    long long gpus = 0;
    int members = 0;
    int slot = -1;  // its scope's index (GroupScopes)
  };
  StampedMap<Total>& rack;
  StampedMap<Total>& su;

  ScopeTotals(const Topology& t, const std::vector<Candidate>& cands) : rack(ThreadMap(0)), su(ThreadMap(1)) {
    rack.Reset(t.racks().size());
    su.Reset(t.scalable_units().size());
    for (const Candidate& c : cands) {
      const RackId r = t.domains()[c.domain].rack;
      Total& in_rack = rack[r];
      in_rack.gpus += c.cap;
      in_rack.members++;
      Total& in_su = su[t.racks()[r].scalable_unit];
      in_su.gpus += c.cap;
      in_su.members++;
    }
  }

 private:
  static StampedMap<Total>& ThreadMap(int which) {
    thread_local StampedMap<Total> maps[2];
    return maps[which];
  }
};

// The rack scopes (more than one domain) and scalable-unit scopes (when there are several) that hold the job, in
// the candidates' order, racks first.
// `totals` are the candidates' (their slots are set here).
std::vector<Scope> GroupScopes(const PlacementContext& ctx, const std::vector<Candidate>& cands, ScopeTotals& totals) {
  const Topology& t = ctx.topology();
  // Only the groups that hold the job get a scope (and a list of members): hundreds of candidates are one domain
  // to a rack on NVL72 racks.
  const bool several_sus = totals.su.size() > 1;
  auto holds_job = [&](const ScopeTotals::Total& total) { return total.gpus >= ctx.gpus(); };
  // Each list sized once from the totals: growing them was a tenth of a multi-domain search's heap traffic.
  size_t rack_scopes = 0, su_scopes = 0;
  for (RackId r : totals.rack.keys())
    if (totals.rack[r].members > 1 && holds_job(totals.rack[r])) ++rack_scopes;
  if (several_sus)
    for (ScalableUnitId su : totals.su.keys())
      if (holds_job(totals.su[su])) ++su_scopes;
  std::vector<Scope> racks, sus;
  racks.reserve(rack_scopes + su_scopes);  // the scalable units are appended to it
  sus.reserve(su_scopes);
  for (const Candidate& c : cands) {
    const RackId r = t.domains()[c.domain].rack;
    ScopeTotals::Total& rack = totals.rack[r];
    if (rack.members > 1 && holds_job(rack)) {
      if (rack.slot < 0) {
        rack.slot = static_cast<int>(racks.size());
        racks.push_back({0, {}, rack.gpus});
        racks.back().members.reserve(rack.members);
      }
      racks[rack.slot].members.push_back(c);
    }
    ScopeTotals::Total& su = totals.su[t.racks()[r].scalable_unit];
    if (several_sus && holds_job(su)) {
      if (su.slot < 0) {
        su.slot = static_cast<int>(sus.size());
        sus.push_back({1, {}, su.gpus});
        sus.back().members.reserve(su.members);
      }
      sus[su.slot].members.push_back(c);
    }
  }
  std::vector<Scope> scopes = std::move(racks);
  for (Scope& s : sus) scopes.push_back(std::move(s));
  return scopes;
}

// The cluster scope: largest first; ties in capacity go to the scalable unit and rack holding the most.
// `totals` are the candidates'.
Scope ClusterScope(const PlacementContext& ctx, const std::vector<Candidate>& cands, long long sum,
                   ScopeTotals& totals) {
  const Topology& t = ctx.topology();
  struct Keyed {
    Candidate candidate;
    long long su_gpus, rack_gpus;
    ScalableUnitId su;
    RackId rack;
    int order;  // in `cands`: the last tie-break, so that a plain sort orders as a stable one (no heap buffer)
  };
  std::vector<Keyed> keyed;
  keyed.reserve(cands.size());
  for (const Candidate& c : cands) {
    const RackId r = t.domains()[c.domain].rack;
    const ScalableUnitId su = t.racks()[r].scalable_unit;
    keyed.push_back({c, totals.su[su].gpus, totals.rack[r].gpus, su, r, static_cast<int>(keyed.size())});
  }
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    if (a.candidate.cap != b.candidate.cap) return a.candidate.cap > b.candidate.cap;
    if (a.su_gpus != b.su_gpus) return a.su_gpus > b.su_gpus;
    if (a.su != b.su) return a.su < b.su;
    if (a.rack_gpus != b.rack_gpus) return a.rack_gpus > b.rack_gpus;
    if (a.rack != b.rack) return a.rack < b.rack;
    return a.order < b.order;
  });
  Scope all{2, {}, sum};
  all.members.reserve(keyed.size());
  for (const Keyed& k : keyed) all.members.push_back(k.candidate);
  return all;
}

// Fewest domains first, then the narrowest scope, then (rail jobs) one whose nodes share a free rail set, then
// the tightest fit. Keeps the first of equals, in the order scopes are offered.
class ScopeChooser {
 public:
  ScopeChooser(const PlacementContext& ctx, PowerScratch* scratch)
      : ctx_(ctx), scratch_(scratch), rail_(RailJob(ctx)) {}
  bool rail() const { return rail_; }

  void Consider(Scope s) {
    if (s.level < 2) SortByCapacity(&s.members);
    GreedyResult r = PlanScope(ctx_, &s.members, scratch_);
    if (r.got < ctx_.gpus()) return;
    bool better = !best_ || r.takes.size() < best_result_.takes.size();
    if (!better && r.takes.size() == best_result_.takes.size()) {
      if (s.level != best_->level) {
        better = s.level < best_->level;
      } else if (rail_ && rail_checks_ < kRailScopeChecks && CanAlign(s) != CanAlign(*best_)) {
        better = CanAlign(s);
      } else {
        better = s.total < best_->total;
      }
    }
    if (better) {
      best_ = std::move(s);
      best_result_ = std::move(r);
    }
  }
  std::optional<Scope>& best() { return best_; }
  GreedyResult& best_result() { return best_result_; }
  int best_domains() const { return best_ ? static_cast<int>(best_result_.takes.size()) : kNever; }

  const RailChoice& RailsOf(Scope& s) {
    if (!s.rails) {
      ++rail_checks_;
      s.rails = RailSetOfMembers(ctx_, s.members);
    }
    return *s.rails;
  }

 private:
  // Whether the scope's nodes share a rail set free on as many nodes as the job needs. Bounded (rail_checks_),
  // so that a decision stays cheap when hundreds of racks tie.
  bool CanAlign(Scope& s) { return RailsOf(s).holders >= ctx_.gpus() / ctx_.k(); }

  const PlacementContext& ctx_;
  PowerScratch* scratch_;
  const bool rail_;
  int rail_checks_ = 0;
  std::optional<Scope> best_;
  GreedyResult best_result_;
};

std::optional<DomainPlan> PlanFromCandidates(const PlacementContext& ctx, std::vector<Candidate> cands, long long sum,
                                             int fewest_possible, PowerScratch* scratch) {
  const Topology& t = ctx.topology();
  const int g = ctx.gpus();
  if (sum < g) return std::nullopt;
  DomainPlan plan;
  if (ctx.locality() == Locality::kNone) {  // smallest fragments first, any count
    GreedyResult r = Greedy(ctx, cands, scratch);
    if (r.got < g) return std::nullopt;
    plan.takes = std::move(r.takes);
    plan.rail_set = RailSetOfTakes(ctx, plan.takes);
    return plan;
  }

  ScopeChooser chooser(ctx, scratch);
  ScopeTotals totals(t, cands);
  std::vector<Scope> groups = GroupScopes(ctx, cands, totals);
  // Objective 4 before 5: among scopes as good on domains and breadth, one whose nodes share a free rail set
  // beats a tighter one. Without rails, offering the scopes narrowest and tightest first lets the search stop at
  // the first that reaches the fewest domains possible: none after it can beat it, and the one chosen is the one
  // a full pass would keep (the first of equals, which the offered order, kept as the last tie-break, leaves
  // first).
  absl::InlinedVector<int, 16> offered(groups.size());
  for (size_t i = 0; i < offered.size(); ++i) offered[i] = static_cast<int>(i);
  if (!chooser.rail())
    std::sort(offered.begin(), offered.end(), [&groups](int a, int b) {
      const Scope& x = groups[a];
      const Scope& y = groups[b];
      if (x.level != y.level) return x.level < y.level;
      return x.total != y.total ? x.total < y.total : a < b;
    });
  const bool may_stop = !chooser.rail();
  for (int i : offered) {
    if (may_stop && chooser.best_domains() <= fewest_possible) break;
    chooser.Consider(std::move(groups[i]));
  }
  if (!may_stop || chooser.best_domains() > fewest_possible) chooser.Consider(ClusterScope(ctx, cands, sum, totals));
  std::optional<Scope>& best = chooser.best();
  if (!best) return std::nullopt;
  GreedyResult& best_result = chooser.best_result();
  {
    // As few domains, but the tightest ones (a shortfall of power in one falls back to the largest-first plan).
    GreedyResult r = Greedy(ctx, TightestFirst(best->members, g, static_cast<int>(best_result.takes.size())), scratch);
    if (r.got >= g && r.takes.size() <= best_result.takes.size()) best_result = std::move(r);
  }

  if (chooser.rail()) {
    // Node-scope domains each give exactly k: put the nodes that have the job's rail set free first, then
    // take again. The domain count cannot grow, since every candidate offers the same k.
    plan.rail_set = chooser.RailsOf(*best).set;
    std::vector<Candidate> order = best->members;
    std::stable_partition(order.begin(), order.end(), [&](const Candidate& c) {
      const GpuMask free = ctx.ledger().free_gpus(t.domains()[c.domain].nodes.front());
      return (plan.rail_set & ~free) == 0;
    });
    GreedyResult r = Greedy(ctx, order, scratch);
    if (r.got >= g && r.takes.size() <= best_result.takes.size()) best_result = std::move(r);
  }
  plan.takes = std::move(best_result.takes);
  if (!chooser.rail()) plan.rail_set = RailSetOfTakes(ctx, plan.takes);
  return plan;
}

}  // namespace

}  // namespace rackwise::internal
