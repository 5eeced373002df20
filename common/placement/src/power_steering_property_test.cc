// Property test for the steering rule against an independent statement of it: progressive filling run the plain
// way, in small equal steps (every allocation of a scope still over its limit gives up one more step of its
// headroom share, until no scope is over), then the give-back the same way (every allocation none of whose scopes
// would pass its limit takes one step back), on random nested racks and power domains, random floors, demands and
// weights. The rule's event-driven answer must agree with it to within two steps, meet every cap, and keep every
// limit between floor and declared, with hysteresis too (from any current limits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "rackwise/power_steering.h"

namespace rackwise {
namespace {

constexpr int kSteps = 2000;

struct Instance {
  std::vector<SteeringScope> scopes;
  std::vector<SteeredAllocation> jobs;
};

// Racks 0..racks-1, then rows (each a run of racks), then optionally one hall over everything.
Instance RandomInstance(std::mt19937_64& rng, bool weighted) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Instance in;
  const int racks = pick(1, 4);
  std::vector<std::vector<int>> chain(racks);  // per rack: its scopes, the rack first
  for (int r = 0; r < racks; ++r) {
    in.scopes.push_back({"rack", 0, pick(1, 5) * 1'000'000LL});
    chain[r].push_back(r);
  }
  if (pick(0, 1)) {
    const int split = pick(1, racks);
    in.scopes.push_back({"row a", 0, 0});
    for (int r = 0; r < split; ++r) chain[r].push_back(static_cast<int>(in.scopes.size()) - 1);
    if (split < racks) {
      in.scopes.push_back({"row b", 0, 0});
      for (int r = split; r < racks; ++r) chain[r].push_back(static_cast<int>(in.scopes.size()) - 1);
    }
  }
  if (pick(0, 1)) {
    in.scopes.push_back({"hall", 0, 0});
    for (int r = 0; r < racks; ++r) chain[r].push_back(static_cast<int>(in.scopes.size()) - 1);
  }
  for (int s = racks; s < static_cast<int>(in.scopes.size()); ++s)
    for (int r = 0; r < racks; ++r)
      if (std::find(chain[r].begin(), chain[r].end(), s) != chain[r].end()) in.scopes[s].fixed += in.scopes[r].fixed;
  const int jobs = pick(1, 7);
  for (int j = 0; j < jobs; ++j) {
    SteeredAllocation a;
    a.id = "job" + std::to_string(j);
    a.declared = pick(300, 1200) * 1000LL;
    a.floor = a.declared * pick(0, 60) / 100;
    a.current = a.declared;
    a.demand = pick(0, 2) == 0 ? a.declared * pick(30, 100) / 100 : a.declared;
    a.weight = weighted ? pick(1, 3) : 1;
    a.started = pick(0, 5);
    std::vector<int64_t> scope_gpus(in.scopes.size(), 0);
    const int first = pick(0, racks - 1), last = std::min(racks - 1, first + pick(0, 1));
    for (int r = first; r <= last; ++r)
      for (int s : chain[r]) scope_gpus[s] += pick(1, 8);
    for (size_t s = 0; s < scope_gpus.size(); ++s)
      if (scope_gpus[s] > 0) a.shares.push_back({static_cast<int>(s), scope_gpus[s]});
    in.jobs.push_back(std::move(a));
  }
  // Limits between what the floors draw and a little above what everything draws: every cap is reachable.
  for (size_t s = 0; s < in.scopes.size(); ++s) {
    Milliwatts floors = in.scopes[s].fixed, full = in.scopes[s].fixed;
    for (const SteeredAllocation& a : in.jobs)
      for (const SteeringShare& sh : a.shares)
        if (sh.scope == static_cast<int>(s)) {
          floors += sh.gpus * std::min(a.floor, a.demand);
          full += sh.gpus * a.demand;
        }
    in.scopes[s].limit = floors + (full - floors) * pick(0, 110) / 100;
  }
  return in;
}

// The independent statement: levels rise in equal steps for every allocation of a scope still over its limit.
std::vector<Milliwatts> SteppedFilling(const Instance& in, bool weighted, double* step) {
  double top = 1;
  for (const SteeredAllocation& a : in.jobs) top = std::max(top, weighted ? a.weight : 1.0);
  *step = top / kSteps;
  std::vector<double> level(in.jobs.size(), 0);
  auto limit = [&](size_t a) {
    const SteeredAllocation& j = in.jobs[a];
    const double share = std::min(1.0, level[a] / (weighted ? j.weight : 1.0));
    return j.declared - static_cast<Milliwatts>(std::ceil(share * static_cast<double>(j.declared - j.floor)));
  };
  for (int round = 0; round <= kSteps; ++round) {
    std::vector<char> over(in.scopes.size(), 0);
    bool any = false;
    for (size_t s = 0; s < in.scopes.size(); ++s) {
      Milliwatts draw = in.scopes[s].fixed;
      for (size_t a = 0; a < in.jobs.size(); ++a)
        for (const SteeringShare& sh : in.jobs[a].shares)
          if (sh.scope == static_cast<int>(s)) draw += sh.gpus * std::min(limit(a), in.jobs[a].demand);
      over[s] = draw > in.scopes[s].limit;
      any |= over[s] != 0;
    }
    if (!any) break;
    for (size_t a = 0; a < in.jobs.size(); ++a) {
      const bool in_over = std::any_of(in.jobs[a].shares.begin(), in.jobs[a].shares.end(),
                                       [&](const SteeringShare& sh) { return over[sh.scope] != 0; });
      if (in_over) level[a] = std::min(top, level[a] + *step);
    }
  }
  // Give back: every allocation none of whose scopes is at its limit gets one step of its level back, together;
  // the allocations of a scope that would pass its limit keep their level and stop for good.
  auto over_limit = [&](size_t s) {
    Milliwatts draw = in.scopes[s].fixed;
    for (size_t a = 0; a < in.jobs.size(); ++a)
      for (const SteeringShare& sh : in.jobs[a].shares)
        if (sh.scope == static_cast<int>(s)) draw += sh.gpus * std::min(limit(a), in.jobs[a].demand);
    return draw > in.scopes[s].limit;
  };
  std::vector<char> stopped(in.jobs.size(), 0);
  for (int round = 0; round <= kSteps; ++round) {
    const std::vector<double> before = level;
    bool moved = false;
    for (size_t a = 0; a < in.jobs.size(); ++a) {
      if (stopped[a] || level[a] <= 0) continue;
      level[a] = std::max(0.0, level[a] - *step);
      moved = true;
    }
    if (!moved) break;
    for (bool again = true; again;) {
      again = false;
      for (size_t s = 0; s < in.scopes.size(); ++s) {
        if (!over_limit(s)) continue;
        for (size_t a = 0; a < in.jobs.size(); ++a)
          for (const SteeringShare& sh : in.jobs[a].shares)
            if (sh.scope == static_cast<int>(s) && level[a] != before[a]) {
              level[a] = before[a];
              stopped[a] = 1;
              again = true;
            }
      }
    }
  }
  std::vector<Milliwatts> out;
  for (size_t a = 0; a < in.jobs.size(); ++a) out.push_back(limit(a));
  return out;
}

Milliwatts ScopeDraw(const Instance& in, const std::vector<Milliwatts>& limits, size_t s) {
  Milliwatts draw = in.scopes[s].fixed;
  for (size_t a = 0; a < in.jobs.size(); ++a)
    for (const SteeringShare& sh : in.jobs[a].shares)
      if (sh.scope == static_cast<int>(s)) draw += sh.gpus * std::min(limits[a], in.jobs[a].demand);
  return draw;
}

TEST(PowerSteeringPropertyTest, TheCutIsProgressiveFillingAndMeetsEveryCap) {
  std::mt19937_64 rng(20261206);
  for (int iteration = 0; iteration < 400; ++iteration) {
    const bool weighted = iteration % 2 == 1;
    const Instance in = RandomInstance(rng, weighted);
    const SteeringPlan plan = PlanSteering(in.scopes, in.jobs, {.hysteresis_fraction = 0.05, .weighted = weighted});
    ASSERT_TRUE(plan.requeue.empty()) << iteration;  // the floors meet every cap by construction
    double step = 0;
    const std::vector<Milliwatts> expected = SteppedFilling(in, weighted, &step);
    for (size_t a = 0; a < in.jobs.size(); ++a) {
      const SteeredAllocation& j = in.jobs[a];
      EXPECT_GE(plan.limits[a], j.floor) << iteration;
      EXPECT_LE(plan.limits[a], j.declared) << iteration;
      const double tolerance = 2 * step / (weighted ? j.weight : 1.0) * static_cast<double>(j.declared - j.floor) + 2;
      EXPECT_NEAR(static_cast<double>(plan.limits[a]), static_cast<double>(expected[a]), tolerance)
          << "iteration " << iteration << " allocation " << a;
    }
    for (size_t s = 0; s < in.scopes.size(); ++s)
      EXPECT_LE(ScopeDraw(in, plan.limits, s), in.scopes[s].limit) << "iteration " << iteration << " scope " << s;
  }
}

TEST(PowerSteeringPropertyTest, WithHysteresisEveryCapIsStillMetAndEveryLimitInRange) {
  std::mt19937_64 rng(7);
  for (int iteration = 0; iteration < 400; ++iteration) {
    Instance in = RandomInstance(rng, iteration % 2 == 1);
    // Limits somewhere between floor and declared, jobs drawing all of them or less.
    for (SteeredAllocation& a : in.jobs) {
      a.current = a.floor + (a.declared - a.floor) * std::uniform_int_distribution<int>(0, 100)(rng) / 100;
      a.demand = std::min(a.demand, a.current);
    }
    const SteeringPlan plan =
        PlanSteering(in.scopes, in.jobs, {.hysteresis_fraction = 0.1, .weighted = iteration % 2 == 1});
    for (size_t s = 0; s < in.scopes.size(); ++s)
      EXPECT_LE(ScopeDraw(in, plan.limits, s), in.scopes[s].limit) << iteration;
    for (size_t a = 0; a < in.jobs.size(); ++a) {
      EXPECT_GE(plan.limits[a], in.jobs[a].floor) << iteration;
      EXPECT_LE(plan.limits[a], in.jobs[a].declared) << iteration;
    }
  }
}

}  // namespace
}  // namespace rackwise
