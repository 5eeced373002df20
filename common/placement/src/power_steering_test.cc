// The steering rule on small hand-worked cases: fair cut, nesting, demand, weights, floors and requeue,
// hysteresis.
#include "rackwise/power_steering.h"

#include <gtest/gtest.h>

namespace rackwise {
namespace {

constexpr Milliwatts kW = 1000;  // one watt in milliwatts

SteeredAllocation Job(std::string id, std::vector<SteeringShare> shares, Milliwatts declared_w, Milliwatts floor_w,
                      int64_t started = 0) {
  SteeredAllocation a;
  a.id = std::move(id);
  a.shares = std::move(shares);
  a.declared = a.current = a.demand = declared_w * kW;
  a.floor = floor_w * kW;
  a.started = started;
  return a;
}

Milliwatts Draw(const std::vector<SteeringScope>& scopes, const std::vector<SteeredAllocation>& jobs,
                const SteeringPlan& plan, int scope) {
  Milliwatts d = scopes[scope].fixed;
  for (size_t a = 0; a < jobs.size(); ++a) {
    if (std::find(plan.requeue.begin(), plan.requeue.end(), static_cast<int>(a)) != plan.requeue.end()) continue;
    for (const SteeringShare& s : jobs[a].shares)
      if (s.scope == scope) d += s.gpus * std::min(plan.limits[a], jobs[a].demand);
  }
  return d;
}

TEST(PowerSteeringTest, UnderEveryCapEveryJobKeepsItsDeclaredWatts) {
  std::vector<SteeringScope> scopes = {{"rack r0", 20000 * kW, 4000 * kW}};
  std::vector<SteeredAllocation> jobs = {Job("a", {{0, 8}}, 700, 200), Job("b", {{0, 8}}, 700, 200)};
  SteeringPlan plan = PlanSteering(scopes, jobs, {});
  EXPECT_EQ(plan.limits, (std::vector<Milliwatts>{700 * kW, 700 * kW}));
  EXPECT_TRUE(plan.requeue.empty());
  EXPECT_EQ(plan.held_below_declared, 0);
}

TEST(PowerSteeringTest, OneRackOverItsCapTakesTheSameShareOffEveryHeadroom) {
  // 4 kW fixed + 8 x 700 + 8 x 500 = 13.6 kW against 12 kW: 1.6 kW to shed over headrooms of 500 and 300 W per
  // GPU (6.4 kW in all): a quarter of each, so 575 W and 425 W.
  std::vector<SteeringScope> scopes = {{"rack r0", 12000 * kW, 4000 * kW}};
  std::vector<SteeredAllocation> jobs = {Job("a", {{0, 8}}, 700, 200), Job("b", {{0, 8}}, 500, 200)};
  SteeringPlan plan = PlanSteering(scopes, jobs, {});
  EXPECT_NEAR(plan.limits[0], 575 * kW, 1);
  EXPECT_NEAR(plan.limits[1], 425 * kW, 1);
  EXPECT_LE(Draw(scopes, jobs, plan, 0), scopes[0].limit);
  EXPECT_EQ(plan.held_below_declared, 2);
}

TEST(PowerSteeringTest, APowerDomainOverItsCapCutsEveryRackBelowItAndARackOverItsOwnCutsMore) {
  // Racks 0 and 1 under row 2. Rack 0 is over its own cap; the row is over too.
  std::vector<SteeringScope> scopes = {
      {"rack r0", 9000 * kW, 2000 * kW}, {"rack r1", 20000 * kW, 2000 * kW}, {"row", 16000 * kW, 4000 * kW}};
  std::vector<SteeredAllocation> jobs = {Job("a", {{0, 8}, {2, 8}}, 1000, 0), Job("b", {{1, 8}, {2, 8}}, 1000, 0)};
  SteeringPlan plan = PlanSteering(scopes, jobs, {});
  // Row: 4 + 16 = 20 kW against 16: 4 kW off 16 kW of headroom is a quarter each (750 W) if rack 0 allows it;
  // rack 0 needs 2 + 8 x L <= 9, L <= 875: it is met by the row's cut already, so both stop at 750 W.
  EXPECT_NEAR(plan.limits[0], 750 * kW, 1);
  EXPECT_NEAR(plan.limits[1], 750 * kW, 1);
  // A tighter rack 0: it needs 2 + 8 L <= 6, L <= 500; the row then needs less from b: 4 + 8 x 500 + 8 L <= 16,
  // L <= 1000: b keeps its declared watts.
  scopes[0].limit = 6000 * kW;
  plan = PlanSteering(scopes, jobs, {});
  EXPECT_NEAR(plan.limits[0], 500 * kW, 1);
  EXPECT_EQ(plan.limits[1], 1000 * kW);
  for (int s = 0; s < 3; ++s) EXPECT_LE(Draw(scopes, jobs, plan, s), scopes[s].limit) << s;
}

TEST(PowerSteeringTest, AJobDrawingLessThanItsLimitSavesOnlyWhatItDraws) {
  // b draws 300 W of its 700: cutting it to 500 saves nothing, so a carries the rack's cut until the shared share
  // reaches b's draw.
  std::vector<SteeringScope> scopes = {{"rack r0", 11000 * kW, 4000 * kW}};
  std::vector<SteeredAllocation> jobs = {Job("a", {{0, 8}}, 700, 100), Job("b", {{0, 8}}, 700, 100)};
  jobs[1].demand = 300 * kW;
  // 4 + 5.6 + 2.4 = 12 kW against 11: a alone sheds 1 kW = 125 W per GPU (a share of 125/600, which leaves b's
  // limit at 575 W, still above what it draws).
  SteeringPlan plan = PlanSteering(scopes, jobs, {});
  EXPECT_NEAR(plan.limits[0], 575 * kW, 1);
  EXPECT_NEAR(plan.limits[1], 575 * kW, 1);
  EXPECT_LE(Draw(scopes, jobs, plan, 0), scopes[0].limit);
}

TEST(PowerSteeringTest, PriorityWeightsCutAHeavierJobByAProportionallySmallerShare) {
  std::vector<SteeringScope> scopes = {{"rack r0", 10000 * kW, 0}};
  std::vector<SteeredAllocation> jobs = {Job("a", {{0, 8}}, 1000, 0), Job("b", {{0, 8}}, 1000, 0)};
  jobs[1].weight = 2;
  // 16 kW against 10: 8 x 1000 x (s + s/2) = 6 kW, s = 0.5: a at 500 W, b at 750 W.
  SteeringPlan plan = PlanSteering(scopes, jobs, {.hysteresis_fraction = 0.05, .weighted = true});
  EXPECT_NEAR(plan.limits[0], 500 * kW, 1);
  EXPECT_NEAR(plan.limits[1], 750 * kW, 1);
  // Unweighted, the same share each.
  plan = PlanSteering(scopes, jobs, {});
  EXPECT_NEAR(plan.limits[0], 625 * kW, 1);
  EXPECT_NEAR(plan.limits[1], 625 * kW, 1);
}

TEST(PowerSteeringTest, WhenTheFloorsCannotMeetTheCapTheNewestJobsAreRequeuedAndTheRestShareTheCut) {
  // Floors: 3 x 8 x 300 W = 7.2 kW + 4 kW fixed = 11.2 kW against 10 kW: the newest (c, started last) goes; then
  // a and b (4 + 2 x 8 x L <= 10: L <= 375 W) share the cut.
  std::vector<SteeringScope> scopes = {{"rack r0", 10000 * kW, 4000 * kW}};
  std::vector<SteeredAllocation> jobs = {Job("a", {{0, 8}}, 700, 300, 1), Job("c", {{0, 8}}, 700, 300, 3),
                                         Job("b", {{0, 8}}, 700, 300, 2)};
  SteeringPlan plan = PlanSteering(scopes, jobs, {});
  EXPECT_EQ(plan.requeue, std::vector<int>{1});
  EXPECT_NEAR(plan.limits[0], 375 * kW, 1);
  EXPECT_NEAR(plan.limits[2], 375 * kW, 1);
  EXPECT_EQ(plan.limits[1], 700 * kW);  // requeued: left as it was
  EXPECT_LE(Draw(scopes, jobs, plan, 0), scopes[0].limit);
  EXPECT_TRUE(plan.unmet_scopes.empty());
}

TEST(PowerSteeringTest, AScopeWhoseFixedDrawAloneIsOverIsReportedAfterEveryJobInItIsRequeued) {
  std::vector<SteeringScope> scopes = {{"rack r0", 3000 * kW, 4000 * kW}};
  std::vector<SteeredAllocation> jobs = {Job("a", {{0, 8}}, 700, 300, 1)};
  SteeringPlan plan = PlanSteering(scopes, jobs, {});
  EXPECT_EQ(plan.requeue, std::vector<int>{0});
  EXPECT_EQ(plan.unmet_scopes, std::vector<int>{0});
}

TEST(PowerSteeringTest, LimitsRiseBackOnlyPastTheHysteresisBand) {
  std::vector<SteeringScope> scopes = {{"rack r0", 12000 * kW, 4000 * kW}};
  std::vector<SteeredAllocation> jobs = {Job("a", {{0, 16}}, 700, 200)};
  // Lowered to 500 W (4 + 16 x 0.5 = 12 kW) and drawing all of it.
  jobs[0].current = jobs[0].demand = 500 * kW;
  SteeringSettings settings{.hysteresis_fraction = 0.1};
  // The cap returns by 2% (12.24 kW): within the 10% band, the limit stays.
  scopes[0].limit = 12240 * kW;
  EXPECT_EQ(PlanSteering(scopes, jobs, settings).limits[0], 500 * kW);
  // The cap returns to 20 kW: raised to what 90% of it allows, 18 - 4 = 14 kW over 16 GPUs (875 W), so 700 W.
  scopes[0].limit = 20000 * kW;
  EXPECT_EQ(PlanSteering(scopes, jobs, settings).limits[0], 700 * kW);
  // The cap returns to 14 kW: raised to (12.6 - 4) / 16 = 537.5 W, leaving the band free.
  scopes[0].limit = 14000 * kW;
  EXPECT_NEAR(PlanSteering(scopes, jobs, settings).limits[0], 537500, 1);
  // The cap falls to 11 kW: lowered at once to (11 - 4) / 16 = 437.5 W.
  scopes[0].limit = 11000 * kW;
  EXPECT_NEAR(PlanSteering(scopes, jobs, settings).limits[0], 437500, 1);
}

TEST(PowerSteeringTest, AJobBelowItsLimitIsCountedAtItsDrawWhenLimitsRise) {
  // a is held at 500 W but draws 300 W: 4 + 16 x 0.3 = 8.8 kW leaves room under 95% of 12 kW, so its limit goes back
  // to what it declared (were it to rise past the cap, the next round lowers it: one telemetry interval at most).
  // Were it drawing its limit, it would be taken to want its declared 700 W: (11.4 - 4) / 16 = 462.5 W < 500, kept.
  std::vector<SteeringScope> scopes = {{"rack r0", 12000 * kW, 4000 * kW}};
  std::vector<SteeredAllocation> jobs = {Job("a", {{0, 16}}, 700, 200)};
  jobs[0].current = 500 * kW;
  jobs[0].demand = 300 * kW;
  EXPECT_EQ(PlanSteering(scopes, jobs, {}).limits[0], 700 * kW);
  jobs[0].demand = 495 * kW;
  EXPECT_EQ(PlanSteering(scopes, jobs, {}).limits[0], 500 * kW);
}

TEST(PowerSteeringTest, AHallCapLoweredByAThirdOverThousandsOfRacksMeetsEveryCap) {
  // 2,048 racks of 4 jobs (8 GPUs each) in 32 rows under one hall; the hall's cap falls to 70% of its draw.
  constexpr int kRacks = 2048, kRows = 32;
  std::vector<SteeringScope> scopes;
  for (int r = 0; r < kRacks; ++r) scopes.push_back({"rack", 40000 * kW, 10000 * kW});
  for (int w = 0; w < kRows; ++w) scopes.push_back({"row", kRacks / kRows * 40000 * kW, kRacks / kRows * 10000 * kW});
  scopes.push_back({"hall", 0, kRacks * 10000LL * kW});
  std::vector<SteeredAllocation> jobs;
  for (int r = 0; r < kRacks; ++r)
    for (int j = 0; j < 4; ++j)
      jobs.push_back(Job("j" + std::to_string(r * 4 + j),
                         {{r, 8}, {kRacks + r / (kRacks / kRows), 8}, {kRacks + kRows, 8}}, 700 + 50 * j, 200));
  scopes.back().limit = (kRacks * 10000LL + kRacks * 8LL * (700 + 750 + 800 + 850)) * kW * 7 / 10;
  const SteeringPlan plan = PlanSteering(scopes, jobs, {});
  EXPECT_TRUE(plan.requeue.empty());
  EXPECT_EQ(plan.held_below_declared, 4 * kRacks);
  Milliwatts hall = scopes.back().fixed;
  for (size_t a = 0; a < jobs.size(); ++a) hall += 8 * plan.limits[a];
  EXPECT_LE(hall, scopes.back().limit);
  EXPECT_GE(hall, scopes.back().limit - static_cast<Milliwatts>(jobs.size()) * 8);
}

TEST(PowerSteeringTest, BadFactsAreClampedNotTrusted) {
  std::vector<SteeringScope> scopes = {{"rack r0", 12000 * kW, 0}};
  std::vector<SteeredAllocation> jobs = {Job("a", {{0, 8}}, 700, 900)};  // floor above declared
  jobs[0].current = 5000 * kW;                                           // limit above declared
  jobs[0].weight = -3;
  SteeringPlan plan = PlanSteering(scopes, jobs, {.hysteresis_fraction = 7, .weighted = true});
  EXPECT_EQ(plan.limits[0], 700 * kW);
}

}  // namespace
}  // namespace rackwise
