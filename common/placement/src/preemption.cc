// PlanPreemption: the cheapest set of candidates whose release lets Placer::Place place the job. See
// rackwise/preemption.h for the order of costs, the relevant candidates, the search and its bound.
#include "rackwise/preemption.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "rackwise/placer.h"
#include "request_setup.h"

namespace rackwise {
namespace {

constexpr int kMaxExhaustiveCandidates = 20;
// What remaking the scratch copy after a trial on a measured rack counts against the calls: a copy of the ledger
// at 131k GPUs (about 1 ms) costs several Place calls.
constexpr int kCallsPerCopy = 8;
// How many of the cheapest candidates the scope across racks holds once a rack has given a set (SearchScopes).
constexpr size_t kCheapestAcrossRacks = 256;

// A relevant candidate as the search sees it. Victims are kept sorted by id, so that a set of victims, as sorted
// indices, compares lexicographically as its sorted ids do.
struct Victim {
  const PreemptionCandidate* candidate = nullptr;
  const Allocation* allocation = nullptr;  // held by the caller's ledger, which does not change
  int64_t micro_hours = 0;
  int usable_gpus = 0;        // GPUs it frees on up nodes the job may use
  bool measured = false;      // it draws from a rack with a power reading
  std::vector<RackId> racks;  // where it draws from, each once
};
using VictimSet = std::vector<int>;  // sorted indices into the victims

struct Cost {
  int64_t micro_hours = 0;
  int jobs = 0;
  int64_t priority = 0;
  auto Key() const { return std::tie(micro_hours, jobs, priority); }
};

absl::Status CheckInputs(absl::Span<const PreemptionCandidate> candidates, const PreemptionLimits& limits) {
  if (limits.exhaustive_candidates < 0 || limits.exhaustive_candidates > kMaxExhaustiveCandidates)
    return absl::InvalidArgumentError(absl::StrCat("exhaustive_candidates ", limits.exhaustive_candidates,
                                                   " is outside 0..", kMaxExhaustiveCandidates));
  if (limits.max_place_calls < 1)
    return absl::InvalidArgumentError(absl::StrCat("max_place_calls ", limits.max_place_calls, " is below 1"));
  absl::flat_hash_set<std::string_view> seen;
  for (const PreemptionCandidate& c : candidates) {
    if (c.id.empty()) return absl::InvalidArgumentError("a preemption candidate has no id");
    if (!seen.insert(c.id).second)
      return absl::InvalidArgumentError(absl::StrCat("preemption candidate ", c.id, " is given twice"));
    if (c.priority < -kMaxPreemptionPriority || c.priority > kMaxPreemptionPriority)
      return absl::InvalidArgumentError(absl::StrCat("preemption candidate ", c.id, ": priority ", c.priority,
                                                     " is outside +-", kMaxPreemptionPriority));
    if (!std::isfinite(c.lost_gpu_hours) || c.lost_gpu_hours < 0 || c.lost_gpu_hours > kMaxLostGpuHours)
      return absl::InvalidArgumentError(absl::StrCat("preemption candidate ", c.id, ": lost GPU-hours ",
                                                     c.lost_gpu_hours, " is outside 0..", kMaxLostGpuHours));
  }
  return absl::OkStatus();
}

// What the job may touch: the nodes it may use, the racks that hold them and the power domains above those.
struct Reach {
  std::vector<char> node, rack, power_domain;
  long long free_gpus = 0;   // free GPUs on those nodes now (up, not failed)
  int most_in_one_rack = 0;  // the most GPUs of those nodes in one rack, healthy or not
};

Reach ReachOf(const Ledger& ledger, const internal::RequestSetup& setup) {
  const Topology& t = ledger.topology();
  Reach reach;
  reach.node.assign(t.nodes().size(), 0);
  reach.rack.assign(t.racks().size(), 0);
  reach.power_domain.assign(t.power_domains().size(), 0);
  std::vector<char> type_ok(t.node_types().size(), 0);
  for (NodeTypeId type : setup.types) type_ok[type] = 1;
  std::vector<int> in_rack(t.racks().size(), 0);
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    if ((!setup.allowed.empty() && !setup.allowed[n]) || !type_ok[t.nodes()[n].type]) continue;
    reach.node[n] = 1;
    reach.free_gpus += std::popcount(ledger.free_gpus(n));
    const RackId r = t.nodes()[n].rack;
    in_rack[r] += t.nodes()[n].gpus;
    reach.most_in_one_rack = std::max(reach.most_in_one_rack, in_rack[r]);
    if (reach.rack[r]) continue;
    reach.rack[r] = 1;
    for (PowerDomainId p : t.racks()[r].power_chain) reach.power_domain[p] = 1;
  }
  return reach;
}

// The candidates that can matter to the job (see the header), sorted by id.
std::vector<Victim> RelevantVictims(const Ledger& ledger, const Reach& reach,
                                    absl::Span<const PreemptionCandidate> candidates) {
  const Topology& t = ledger.topology();
  std::vector<Victim> out;
  for (const PreemptionCandidate& c : candidates) {
    const Allocation* a = ledger.Find(c.id);
    if (a == nullptr) continue;
    Victim v{&c, a, std::llround(c.lost_gpu_hours * 1e6), 0, false, {}};
    bool relevant = false;
    for (const NodeGpus& ng : a->nodes) {
      const RackId r = t.nodes()[ng.node].rack;
      v.measured = v.measured || ledger.measured_rack_draw(r).has_value();
      if (reach.node[ng.node] && ledger.node_health(ng.node) == NodeHealth::kUp)
        v.usable_gpus += std::popcount(ng.gpus & ~ledger.failed_gpus(ng.node));
      if (std::find(v.racks.begin(), v.racks.end(), r) == v.racks.end()) v.racks.push_back(r);
      relevant = relevant || reach.rack[r];
      for (PowerDomainId p : t.racks()[r].power_chain) relevant = relevant || reach.power_domain[p];
    }
    if (relevant) out.push_back(v);
  }
  std::sort(out.begin(), out.end(), [](const Victim& a, const Victim& b) { return a.candidate->id < b.candidate->id; });
  return out;
}

// Trials of victim sets on one scratch copy of the ledger, each answered once, within a budget of Place calls;
// and the cheapest set found so far that makes room.
class Search {
 public:
  Search(const Ledger& ledger, const PlacementRequest& request, std::vector<Victim> victims, long long free_gpus,
         int calls)
      : ledger_(ledger),
        scratch_(ledger),
        request_(request),
        victims_(std::move(victims)),
        free_gpus_(free_gpus),
        calls_left_(calls) {
    tried_.emplace(VictimSet{}, std::nullopt);  // Place said so before the search began
  }

  const std::vector<Victim>& victims() const { return victims_; }
  bool out_of_calls() const { return calls_left_ <= 0; }
  int calls_left() const { return calls_left_; }
  // Lifts the bound on Place calls (the last pass over the answer, which costs at most one per victim).
  void Unbound() { calls_left_ = std::numeric_limits<int>::max(); }

  Cost CostOf(const VictimSet& set) const {
    Cost c;
    for (int i : set) {
      c.micro_hours += victims_[i].micro_hours;
      c.priority += victims_[i].candidate->priority;
    }
    c.jobs = static_cast<int>(set.size());
    return c;
  }
  bool Cheaper(const VictimSet& a, const VictimSet& b) const {
    const Cost ca = CostOf(a), cb = CostOf(b);
    if (ca.Key() != cb.Key()) return ca.Key() < cb.Key();
    return a < b;
  }
  // One victim's cost alone, for cheapest-first orders (Cheaper on one-victim sets, without building them).
  bool CheaperVictim(int a, int b) const {
    const Victim &x = victims_[a], &y = victims_[b];
    return std::tie(x.micro_hours, x.candidate->priority, a) < std::tie(y.micro_hours, y.candidate->priority, b);
  }

  // Whether the job is placed with `set` gone. False, without a Place call, when the GPUs the set frees cannot add
  // up to the job, or when the calls have run out.
  absl::StatusOr<bool> Fits(const VictimSet& set);

  // Drops victims most expensive first while the job still fits; `set` must fit.
  absl::StatusOr<VictimSet> Minimize(VictimSet set);

  // The victims of `set` (which fits) that the decision Place gave for it needs: those holding its GPUs, if the
  // job still fits with only them gone; else those in its racks or under their power domains, if it fits then;
  // else `set`. Cuts a prefix of a scope that frees GPUs elsewhere down in one or two calls instead of one per
  // victim.
  absl::StatusOr<VictimSet> Footprint(const VictimSet& set);

  // Keeps `set` (which fits) if it is the cheapest so far.
  void Offer(const VictimSet& set) {
    if (!best_ || Cheaper(set, *best_)) best_ = set;
  }
  const std::optional<VictimSet>& best() const { return best_; }
  // Where Place puts the job on a fresh copy of the ledger without `set` (which fits): exactly what the face's
  // ledger will answer once it releases the victims. Trials leave the scratch copy's indexes in another order
  // (domains with equally many free GPUs listed differently), where Place may pick other nodes of as many domains.
  absl::StatusOr<PlacementDecision> FinalDecision(const VictimSet& set);

 private:
  absl::StatusOr<std::optional<PlacementDecision>> PlaceWithout(const VictimSet& set);

  const Ledger& ledger_;
  Ledger scratch_;  // the ledger as it is, between trials
  PlacementRequest request_;
  std::vector<Victim> victims_;
  long long free_gpus_;
  int calls_left_;
  std::map<VictimSet, std::optional<PlacementDecision>> tried_;
  std::optional<VictimSet> best_;
};

absl::StatusOr<std::optional<PlacementDecision>> Search::PlaceWithout(const VictimSet& set) {
  --calls_left_;
  for (int i : set) scratch_.Release(victims_[i].allocation->id);
  absl::StatusOr<PlacementOutcome> out = Placer::Place(scratch_, request_);
  bool measured = false;
  for (auto i = set.rbegin(); i != set.rend(); ++i) {
    // As it was: kRecover, since a cap lowered meanwhile does not refuse what already runs.
    if (absl::Status s = scratch_.Commit(*victims_[*i].allocation, CommitMode::kRecover); !s.ok()) return s;
    measured = measured || victims_[*i].measured;
  }
  // Committing back counts the victim as placed since the rack's last reading: only a fresh copy is exact.
  if (measured) {
    scratch_ = ledger_;
    calls_left_ -= kCallsPerCopy - 1;
  }
  if (!out.ok()) return out.status();
  if (auto* decision = std::get_if<PlacementDecision>(&*out)) return std::optional(std::move(*decision));
  return std::optional<PlacementDecision>();
}

absl::StatusOr<PlacementDecision> Search::FinalDecision(const VictimSet& set) {
  scratch_ = ledger_;
  for (int i : set) scratch_.Release(victims_[i].allocation->id);
  absl::StatusOr<PlacementOutcome> out = Placer::Place(scratch_, request_);
  if (!out.ok()) return out.status();
  if (auto* decision = std::get_if<PlacementDecision>(&*out)) return std::move(*decision);
  return *tried_.at(set);  // not seen in tests: the trial's answer, valid as well
}

absl::StatusOr<VictimSet> Search::Footprint(const VictimSet& set) {
  const Topology& t = ledger_.topology();
  const PlacementDecision& decision = *tried_.at(set);
  absl::flat_hash_map<NodeId, GpuMask> taken;
  for (const NodeGpus& ng : decision.nodes) taken[ng.node] = ng.gpus;
  absl::flat_hash_set<PowerDomainId> powering;
  absl::flat_hash_set<RackId> racks;
  for (const RackPower& rp : decision.racks) {
    racks.insert(rp.rack);
    powering.insert(t.racks()[rp.rack].power_chain.begin(), t.racks()[rp.rack].power_chain.end());
  }
  VictimSet on_gpus, on_power;
  for (int i : set) {
    bool gpus = false, power = false;
    for (const NodeGpus& ng : victims_[i].allocation->nodes) {
      auto it = taken.find(ng.node);
      gpus = gpus || (it != taken.end() && (it->second & ng.gpus) != 0);
      const RackId r = t.nodes()[ng.node].rack;
      power = power || racks.contains(r);
      for (PowerDomainId p : t.racks()[r].power_chain) power = power || powering.contains(p);
    }
    if (gpus) on_gpus.push_back(i);
    if (gpus || power) on_power.push_back(i);
  }
  for (const VictimSet* fewer : {&on_gpus, &on_power}) {
    if (fewer->empty() || fewer->size() == set.size()) continue;
    absl::StatusOr<bool> fits = Fits(*fewer);
    if (!fits.ok()) return fits.status();
    if (*fits) return *fewer;
  }
  return set;
}

absl::StatusOr<bool> Search::Fits(const VictimSet& set) {
  if (auto it = tried_.find(set); it != tried_.end()) return it->second.has_value();
  long long gpus = free_gpus_;
  for (int i : set) gpus += victims_[i].usable_gpus;
  if (gpus < request_.gpus) return false;
  if (out_of_calls()) return false;
  absl::StatusOr<std::optional<PlacementDecision>> decision = PlaceWithout(set);
  if (!decision.ok()) return decision.status();
  const bool fits = decision->has_value();
  tried_.emplace(set, *std::move(decision));
  return fits;
}

absl::StatusOr<VictimSet> Search::Minimize(VictimSet set) {
  std::vector<int> dearest_first = set;
  std::sort(dearest_first.begin(), dearest_first.end(), [&](int a, int b) { return CheaperVictim(b, a); });
  for (int drop : dearest_first) {
    VictimSet without;
    for (int i : set)
      if (i != drop) without.push_back(i);
    absl::StatusOr<bool> fits = Fits(without);
    if (!fits.ok()) return fits.status();
    if (*fits) set = std::move(without);
  }
  return set;
}

VictimSet FromMask(uint32_t mask) {
  VictimSet set;
  for (; mask != 0; mask &= mask - 1) set.push_back(std::countr_zero(mask));
  return set;
}

// Every subset, cheapest first; the first that fits is the cheapest there is. True when that answer (or "none")
// is exact, false when the calls ran out first.
absl::StatusOr<bool> SearchEverySubset(Search& search) {
  const int n = static_cast<int>(search.victims().size());
  std::vector<std::pair<Cost, uint32_t>> subsets;
  subsets.reserve((size_t{1} << n) - 1);
  for (uint32_t mask = 1; mask < (uint32_t{1} << n); ++mask) {
    Cost c;
    for (uint32_t m = mask; m != 0; m &= m - 1) {
      const Victim& v = search.victims()[std::countr_zero(m)];
      c.micro_hours += v.micro_hours;
      c.priority += v.candidate->priority;
      ++c.jobs;
    }
    subsets.emplace_back(c, mask);
  }
  // Equal costs: the sorted indices compared lexicographically. Past the lowest bit where the masks differ, the
  // one holding that bit is first, unless the other holds nothing above it (it is then a prefix of the first).
  auto ids_first = [](uint32_t a, uint32_t b) {
    const int low = std::countr_zero(a ^ b);
    const bool a_holds = (a >> low) & 1;
    const uint32_t other_above = (a_holds ? b : a) >> (low + 1);
    return a_holds == (other_above != 0);
  };
  std::sort(subsets.begin(), subsets.end(), [&](const auto& x, const auto& y) {
    if (x.first.Key() != y.first.Key()) return x.first.Key() < y.first.Key();
    return x.second != y.second && ids_first(x.second, y.second);
  });
  for (const auto& [cost, mask] : subsets) {
    const VictimSet set = FromMask(mask);
    absl::StatusOr<bool> fits = search.Fits(set);
    if (!fits.ok()) return fits.status();
    if (*fits) {
      search.Offer(set);
      return true;
    }
    if (search.out_of_calls()) return false;
  }
  return true;
}

// One scope's victims, cheapest first: the shortest prefix that fits, found by doubling then bisection (freeing
// more never hurts), so that a trial releases about as many victims as the answer holds; then cut to the
// victims the trial's decision needs, minimized, and offered.
absl::Status SearchScope(Search& search, const std::vector<int>& order) {
  auto prefix = [&](size_t k) {
    VictimSet set(order.begin(), order.begin() + k);
    std::sort(set.begin(), set.end());
    return set;
  };
  if (order.empty()) return absl::OkStatus();
  size_t lo = 0, hi = 1;  // prefix(lo) does not fit (nothing: Place said so first)
  for (;; lo = hi, hi *= 2) {
    hi = std::min(hi, order.size());
    absl::StatusOr<bool> fits = search.Fits(prefix(hi));
    if (!fits.ok()) return fits.status();
    if (*fits) break;
    if (hi == order.size() || search.out_of_calls()) return absl::OkStatus();
  }
  while (hi - lo > 1 && !search.out_of_calls()) {
    const size_t mid = (lo + hi) / 2;
    absl::StatusOr<bool> fits = search.Fits(prefix(mid));
    if (!fits.ok()) return fits.status();
    (*fits ? hi : lo) = mid;
  }
  absl::StatusOr<VictimSet> needed = search.Footprint(prefix(hi));
  if (!needed.ok()) return needed.status();
  absl::StatusOr<VictimSet> set = search.Minimize(*std::move(needed));
  if (!set.ok()) return set.status();
  search.Offer(*set);
  return absl::OkStatus();
}

// The victims of each rack, and of each power domain (on a rack below it), cheapest first.
struct ScopeIndex {
  std::vector<std::vector<int>> by_rack, by_power_domain;
};

ScopeIndex IndexScopes(const Topology& t, const Search& search) {
  ScopeIndex index;
  index.by_rack.resize(t.racks().size());
  index.by_power_domain.resize(t.power_domains().size());
  std::vector<int> seen_pd(t.power_domains().size(), -1);  // the last victim listed under each
  for (int i = 0; i < static_cast<int>(search.victims().size()); ++i) {
    for (RackId r : search.victims()[i].racks) {
      index.by_rack[r].push_back(i);
      for (PowerDomainId p : t.racks()[r].power_chain)
        if (std::exchange(seen_pd[p], i) != i) index.by_power_domain[p].push_back(i);
    }
  }
  auto cheapest_first = [&](int a, int b) { return search.CheaperVictim(a, b); };
  for (auto& list : index.by_rack) std::sort(list.begin(), list.end(), cheapest_first);
  for (auto& list : index.by_power_domain) std::sort(list.begin(), list.end(), cheapest_first);
  return index;
}

// Racks holding a node the job may use and a victim, by what freeing enough GPUs there costs (the cheapest-first
// prefix of its victims), cheapest first; racks that cannot hold the job alone last.
std::vector<RackId> RackOrder(const Ledger& ledger, const Reach& reach, const Search& search, const ScopeIndex& index,
                              int gpus) {
  const Topology& t = ledger.topology();
  std::vector<std::pair<int64_t, RackId>> racks;
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    if (!reach.rack[r] || index.by_rack[r].empty()) continue;
    long long free = 0;
    for (NodeId n : t.racks()[r].nodes)
      if (reach.node[n]) free += std::popcount(ledger.free_gpus(n));
    int64_t cost = 0;
    for (size_t k = 0; free < gpus; ++k) {
      if (k == index.by_rack[r].size()) {
        cost = std::numeric_limits<int64_t>::max();
        break;
      }
      free += search.victims()[index.by_rack[r][k]].usable_gpus;
      cost += search.victims()[index.by_rack[r][k]].micro_hours;
    }
    racks.emplace_back(cost, r);
  }
  std::sort(racks.begin(), racks.end());
  std::vector<RackId> out;
  for (const auto& [cost, r] : racks) out.push_back(r);
  return out;
}

// A rack's scope: its own victims cheapest first, then the others under its power domains cheapest first.
std::vector<int> RackScope(const Topology& t, const Search& search, const ScopeIndex& index, RackId rack) {
  std::vector<int> order = index.by_rack[rack];
  absl::flat_hash_set<int> listed(order.begin(), order.end());
  std::vector<int> power;
  for (PowerDomainId p : t.racks()[rack].power_chain)
    for (int i : index.by_power_domain[p])
      if (listed.insert(i).second) power.push_back(i);
  std::sort(power.begin(), power.end(), [&](int a, int b) { return search.CheaperVictim(a, b); });
  order.insert(order.end(), power.begin(), power.end());
  return order;
}

// The bounded search: the racks' scopes while three quarters of the calls last; then every relevant candidate as
// one scope, cheapest first, for jobs that span racks (or need not stay in one: `preferred`, `none`). When a rack
// already gave a set and one rack could hold the job, only the kCheapestAcrossRacks cheapest: at 131k GPUs a
// cheapest-first prefix of every running job that frees a whole rack holds thousands, and each trial releases
// them all. Nothing is offered when the job does not fit even with every candidate gone (asked only when the
// racks gave nothing: that trial releases every candidate).
absl::Status SearchScopes(Search& search, const Ledger& ledger, const Reach& reach, int gpus, int calls) {
  const ScopeIndex index = IndexScopes(ledger.topology(), search);
  for (RackId rack : RackOrder(ledger, reach, search, index, gpus)) {
    if (search.calls_left() <= calls / 4) break;
    if (absl::Status s = SearchScope(search, RackScope(ledger.topology(), search, index, rack)); !s.ok()) return s;
  }
  std::vector<int> everyone(search.victims().size());
  for (int i = 0; i < static_cast<int>(everyone.size()); ++i) everyone[i] = i;
  if (!search.best()) {
    search.Unbound();  // the whole set fits or not; if it does, this scope finds a set
    absl::StatusOr<bool> fits = search.Fits(everyone);
    if (!fits.ok() || !*fits) return fits.status();
  }
  std::sort(everyone.begin(), everyone.end(), [&](int a, int b) { return search.CheaperVictim(a, b); });
  if (search.best() && gpus <= reach.most_in_one_rack && everyone.size() > kCheapestAcrossRacks)
    everyone.resize(kCheapestAcrossRacks);
  return SearchScope(search, everyone);
}

absl::StatusOr<PreemptionPlan> PlanFor(Search& search, const VictimSet& set) {
  PreemptionPlan plan;
  absl::StatusOr<PlacementDecision> decision = search.FinalDecision(set);
  if (!decision.ok()) return decision.status();
  plan.decision = *std::move(decision);
  for (int i : set) {
    plan.victims.push_back(search.victims()[i].candidate->id);
    plan.lost_gpu_hours += search.victims()[i].candidate->lost_gpu_hours;
  }
  return plan;
}

}  // namespace

absl::StatusOr<std::optional<PreemptionPlan>> PlanPreemption(const Ledger& ledger, const PlacementRequest& request,
                                                             absl::Span<const PreemptionCandidate> candidates,
                                                             const PreemptionLimits& limits) {
  if (absl::Status s = CheckInputs(candidates, limits); !s.ok()) return s;
  absl::StatusOr<internal::RequestSetup> setup = internal::SetUpRequest(ledger.topology(), request);
  if (!setup.ok()) return setup.status();
  PlacementRequest quiet = request;
  quiet.report_refusal = false;  // trials only need yes or no
  absl::StatusOr<PlacementOutcome> now = Placer::Place(ledger, quiet);
  if (!now.ok()) return now.status();
  if (auto* decision = std::get_if<PlacementDecision>(&*now)) return PreemptionPlan{std::move(*decision), {}, 0};

  const Reach reach = ReachOf(ledger, *setup);
  std::vector<Victim> victims = RelevantVictims(ledger, reach, candidates);
  if (victims.empty()) return std::nullopt;
  const size_t n = victims.size();
  Search search(ledger, quiet, std::move(victims), reach.free_gpus, limits.max_place_calls);
  bool exact = false;
  if (static_cast<int>(n) <= limits.exhaustive_candidates) {
    // Freeing more never takes a GPU or a watt away: if all of them do not make room, no subset does.
    VictimSet everyone(n);
    for (size_t i = 0; i < n; ++i) everyone[i] = static_cast<int>(i);
    absl::StatusOr<bool> all = search.Fits(everyone);
    if (!all.ok()) return all.status();
    if (!*all) return std::nullopt;
    absl::StatusOr<bool> done = SearchEverySubset(search);
    if (!done.ok()) return done.status();
    exact = *done;
  }
  if (!exact) {
    if (absl::Status s = SearchScopes(search, ledger, reach, request.gpus, limits.max_place_calls); !s.ok()) return s;
  }
  if (!search.best()) return std::nullopt;
  if (exact) return PlanFor(search, *search.best());
  // The calls may have run out while a scope was being minimized: no victim the job can do without stays.
  search.Unbound();
  absl::StatusOr<VictimSet> minimal = search.Minimize(*search.best());
  if (!minimal.ok()) return minimal.status();
  return PlanFor(search, *minimal);
}

}  // namespace rackwise
