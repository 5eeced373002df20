// Power steering: requeue at the floors, then progressive filling of the cut, then hysteresis. See
// power_steering.h for the contract.
#include "rackwise/power_steering.h"

#include <algorithm>
#include <cmath>

namespace rackwise {
namespace {

// A job drawing at least this share of its limit is taken to be held back by it (it would draw more).
constexpr double kAtLimitShare = 0.97;
// Bisection steps on a level: 2^-50 of the largest weight, far below a milliwatt of any headroom.
constexpr int kBisectionSteps = 50;

double WeightOf(const SteeredAllocation& a, bool weighted) {
  return weighted && std::isfinite(a.weight) && a.weight > 0 ? a.weight : 1.0;
}

// The limit of `a` at `level`: declared less min(1, level / weight) of its headroom, rounded down.
Milliwatts LimitAt(const SteeredAllocation& a, double level, bool weighted) {
  const Milliwatts headroom = std::max<Milliwatts>(0, a.declared - a.floor);
  const double share = std::clamp(level / WeightOf(a, weighted), 0.0, 1.0);
  const Milliwatts cut = static_cast<Milliwatts>(std::ceil(share * static_cast<double>(headroom)));
  return std::max(a.floor, a.declared - std::min(cut, headroom));
}

// The progressive filling of one round: scopes over their (scaled) limits raise the level of all their
// allocations together; an allocation stops when every scope it counts under is back under its limit.
class ProgressiveFill {
 public:
  ProgressiveFill(const std::vector<SteeringScope>& scopes, const std::vector<SteeredAllocation>& allocations,
                  const std::vector<Milliwatts>& demand, const std::vector<char>& skip, bool weighted,
                  double limit_scale)
      : scopes_(scopes), allocations_(allocations), demand_(demand), skip_(skip), weighted_(weighted) {
    members_.resize(scopes.size());
    limit_.resize(scopes.size());
    for (size_t s = 0; s < scopes.size(); ++s)
      limit_[s] = static_cast<Milliwatts>(std::floor(static_cast<double>(scopes[s].limit) * limit_scale));
    for (size_t a = 0; a < allocations.size(); ++a) {
      if (skip[a]) continue;
      for (const SteeringShare& sh : allocations[a].shares)
        members_[sh.scope].push_back({static_cast<int>(a), sh.gpus});
      top_level_ = std::max(top_level_, WeightOf(allocations[a], weighted));
    }
    level_.assign(allocations.size(), 0);
    active_.assign(allocations.size(), 0);
  }

  std::vector<Milliwatts> Run() {
    std::vector<char> over(scopes_.size(), 0);
    for (size_t s = 0; s < scopes_.size(); ++s) over[s] = Draw(s, 0) > limit_[s];
    // Per over scope, the level at which it comes back under its limit (kUnknown: to work out; the top level
    // when it cannot). Worked out again only when one of its members starts or stops rising.
    constexpr double kUnknown = -1;
    std::vector<double> meets(scopes_.size(), kUnknown);
    std::vector<char> was_active(allocations_.size(), 0);
    double level = 0;
    while (level < top_level_ && std::any_of(over.begin(), over.end(), [](char c) { return c != 0; })) {
      MarkActive(over);
      for (size_t a = 0; a < allocations_.size(); ++a)
        if (active_[a] != was_active[a])
          for (const SteeringShare& sh : allocations_[a].shares) meets[sh.scope] = kUnknown;
      was_active = active_;
      double next = top_level_;
      for (size_t s = 0; s < scopes_.size(); ++s) {
        if (!over[s]) continue;
        if (meets[s] == kUnknown) meets[s] = Draw(s, top_level_) <= limit_[s] ? LevelThatMeets(s, level) : top_level_;
        next = std::min(next, meets[s]);
      }
      level = next;
      for (size_t a = 0; a < allocations_.size(); ++a)
        if (active_[a]) level_[a] = level;
      for (size_t s = 0; s < scopes_.size(); ++s)
        if (over[s] && Draw(s, level) <= limit_[s]) over[s] = 0;
    }
    GiveBack();
    std::vector<Milliwatts> out(allocations_.size(), 0);
    for (size_t a = 0; a < allocations_.size(); ++a)
      out[a] = skip_[a] ? allocations_[a].current : LimitAt(allocations_[a], level_[a], weighted_);
    return out;
  }

  // The filling can leave a scope below its limit (its allocations stopped for a tighter scope elsewhere, and the
  // others of it were cut with them): lower the levels of every allocation none of whose scopes is at its limit,
  // together, until one of its scopes is (or its level is 0). No allocation can then be raised alone.
  void GiveBack() {
    const std::vector<double> filled = level_;
    std::vector<char> frozen(allocations_.size(), 1);
    for (size_t a = 0; a < allocations_.size(); ++a) frozen[a] = skip_[a] || filled[a] <= 0;
    // Scope s's draw with its unfrozen members lowered by d from where the filling left them.
    auto draw_back = [&](size_t s, double d) {
      Milliwatts draw = scopes_[s].fixed;
      for (const Member& m : members_[s]) {
        const double level = frozen[m.allocation] ? level_[m.allocation] : std::max(0.0, filled[m.allocation] - d);
        draw += m.gpus * std::min(LimitAt(allocations_[m.allocation], level, weighted_), demand_[m.allocation]);
      }
      return draw;
    };
    // Per scope: the most it lets its unfrozen members give back (top_level_ when it never binds; kUnknown: to
    // work out again, after one of its members froze).
    constexpr double kUnknown = -1;
    std::vector<double> bound(scopes_.size(), kUnknown);
    double back = 0;
    for (bool any = true; any && back < top_level_;) {
      double next = top_level_;
      for (size_t s = 0; s < scopes_.size(); ++s) {
        if (bound[s] == kUnknown) bound[s] = MostBack(s, back, draw_back, frozen);
        next = std::min(next, bound[s]);
      }
      back = next;
      for (size_t a = 0; a < allocations_.size(); ++a)
        if (!frozen[a]) level_[a] = std::max(0.0, filled[a] - back);
      std::vector<int> stopped;
      for (size_t s = 0; s < scopes_.size(); ++s)
        if (bound[s] <= back)
          for (const Member& m : members_[s])
            if (!frozen[m.allocation]) stopped.push_back(m.allocation), frozen[m.allocation] = 1;
      for (size_t a = 0; a < allocations_.size(); ++a)
        if (!frozen[a] && level_[a] <= 0) stopped.push_back(static_cast<int>(a)), frozen[a] = 1;
      for (int a : stopped)
        for (const SteeringShare& sh : allocations_[a].shares) bound[sh.scope] = kUnknown;
      any = std::any_of(frozen.begin(), frozen.end(), [](char f) { return f == 0; });
    }
  }

  // The most scope s lets its unfrozen members give back from `from` on (top_level_ when it never binds).
  template <typename DrawBack>
  double MostBack(size_t s, double from, const DrawBack& draw_back, const std::vector<char>& frozen) const {
    if (std::none_of(members_[s].begin(), members_[s].end(), [&](const Member& m) { return !frozen[m.allocation]; }) ||
        draw_back(s, top_level_) <= limit_[s])
      return top_level_;
    double lo = from, hi = top_level_;
    for (int i = 0; i < kBisectionSteps && hi - lo > 0; ++i) {
      const double mid = lo + (hi - lo) / 2;
      (draw_back(s, mid) <= limit_[s] ? lo : hi) = mid;
    }
    return lo;
  }

 private:
  struct Member {
    int allocation;
    int64_t gpus;
  };

  void MarkActive(const std::vector<char>& over) {
    std::fill(active_.begin(), active_.end(), 0);
    for (size_t s = 0; s < scopes_.size(); ++s)
      if (over[s])
        for (const Member& m : members_[s]) active_[m.allocation] = 1;
  }

  // Scope s's draw with the active allocations at `level` and the others where they stopped.
  Milliwatts Draw(size_t s, double level) const {
    Milliwatts draw = scopes_[s].fixed;
    for (const Member& m : members_[s]) {
      const SteeredAllocation& a = allocations_[m.allocation];
      const double at = active_[m.allocation] ? std::max(level, level_[m.allocation]) : level_[m.allocation];
      draw += m.gpus * std::min(LimitAt(a, at, weighted_), demand_[m.allocation]);
    }
    return draw;
  }

  // The least level above `from` at which scope s is under its limit (it is at the top level).
  double LevelThatMeets(size_t s, double from) const {
    double lo = from, hi = top_level_;
    for (int i = 0; i < kBisectionSteps && hi - lo > 0; ++i) {
      const double mid = lo + (hi - lo) / 2;
      (Draw(s, mid) <= limit_[s] ? hi : lo) = mid;
    }
    return hi;
  }

  const std::vector<SteeringScope>& scopes_;
  const std::vector<SteeredAllocation>& allocations_;
  const std::vector<Milliwatts>& demand_;
  const std::vector<char>& skip_;
  const bool weighted_;
  std::vector<std::vector<Member>> members_;
  std::vector<Milliwatts> limit_;
  std::vector<double> level_;
  std::vector<char> active_;
  double top_level_ = 1;
};

// Requeue at the floors: the newest allocation of the first scope the floors cannot bring under its limit, until
// none is left. Marks them in `skip`.
std::vector<int> PlanRequeue(const std::vector<SteeringScope>& scopes,
                             const std::vector<SteeredAllocation>& allocations, std::vector<char>* skip,
                             std::vector<int>* unmet) {
  std::vector<Milliwatts> at_floor(scopes.size());
  std::vector<std::vector<int>> members(scopes.size());
  for (size_t s = 0; s < scopes.size(); ++s) at_floor[s] = scopes[s].fixed;
  for (size_t a = 0; a < allocations.size(); ++a) {
    const SteeredAllocation& al = allocations[a];
    for (const SteeringShare& sh : al.shares) {
      at_floor[sh.scope] += sh.gpus * std::min(al.floor, al.demand);
      members[sh.scope].push_back(static_cast<int>(a));
    }
  }
  std::vector<int> out;
  for (size_t s = 0; s < scopes.size(); ++s) {
    while (at_floor[s] > scopes[s].limit) {
      int newest = -1;
      for (int a : members[s]) {
        if ((*skip)[a]) continue;
        const SteeredAllocation& c = allocations[a];
        if (newest < 0 || c.started > allocations[newest].started ||
            (c.started == allocations[newest].started && c.id > allocations[newest].id))
          newest = a;
      }
      if (newest < 0) {
        unmet->push_back(static_cast<int>(s));
        break;
      }
      (*skip)[newest] = 1;
      out.push_back(newest);
      const SteeredAllocation& gone = allocations[newest];
      for (const SteeringShare& sh : gone.shares) at_floor[sh.scope] -= sh.gpus * std::min(gone.floor, gone.demand);
    }
  }
  return out;
}

}  // namespace

std::vector<Milliwatts> SteeringTargets(const std::vector<SteeringScope>& scopes,
                                        const std::vector<SteeredAllocation>& allocations,
                                        const std::vector<Milliwatts>& demand, const std::vector<char>& skip,
                                        bool weighted, double limit_scale) {
  return ProgressiveFill(scopes, allocations, demand, skip, weighted, limit_scale).Run();
}

SteeringPlan PlanSteering(const std::vector<SteeringScope>& scopes, const std::vector<SteeredAllocation>& input,
                          const SteeringSettings& settings) {
  // Sanitise what a face may get wrong: floors above declared, a current limit outside the range.
  std::vector<SteeredAllocation> allocations = input;
  for (SteeredAllocation& a : allocations) {
    a.floor = std::clamp<Milliwatts>(a.floor, 0, a.declared);
    a.current = std::clamp(a.current, a.floor, a.declared);
    a.demand = std::max<Milliwatts>(0, a.demand);
  }
  SteeringPlan plan;
  std::vector<char> skip(allocations.size(), 0);
  plan.requeue = PlanRequeue(scopes, allocations, &skip, &plan.unmet_scopes);
  std::vector<Milliwatts> demand(allocations.size()), wanting(allocations.size());
  for (size_t a = 0; a < allocations.size(); ++a) {
    demand[a] = allocations[a].demand;
    const bool held = static_cast<double>(demand[a]) >= kAtLimitShare * static_cast<double>(allocations[a].current);
    wanting[a] = held ? std::max(demand[a], allocations[a].declared) : demand[a];
  }
  const double band = std::clamp(settings.hysteresis_fraction, 0.0, 0.5);
  const std::vector<Milliwatts> down = SteeringTargets(scopes, allocations, demand, skip, settings.weighted);
  const std::vector<Milliwatts> up = SteeringTargets(scopes, allocations, wanting, skip, settings.weighted, 1 - band);
  plan.limits.resize(allocations.size());
  for (size_t a = 0; a < allocations.size(); ++a) {
    plan.limits[a] = skip[a] ? allocations[a].current : std::min(down[a], std::max(up[a], allocations[a].current));
    if (!skip[a] && plan.limits[a] < allocations[a].declared) plan.held_below_declared++;
  }
  return plan;
}

}  // namespace rackwise
