// Oversubscription: when a placement counts a job at less than declared, and when it does not.
#include "rackwise/oversubscription.h"

#include <gtest/gtest.h>

#include <variant>

#include "rackwise/ledger.h"
#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

v1::ClusterDescription H100Racks(double oversubscribe_pct) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({.system = ReferenceSystem::kHgxH100, .racks = 1, .nodes_per_rack = 4, .rack_cap_kw = 30});
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_oversubscribe_pct(oversubscribe_pct);
  return d;
}

TelemetrySettings Steering() {
  TelemetrySettings s;
  s.enabled = true;
  s.on_overdraw = OverdrawAction::kLowerLimits;
  return s;
}

TEST(OversubscriptionTest, CountsAJobAtTheShareLessWhenSteeringIsOnAndTelemetryFresh) {
  Topology t = *Topology::Build(H100Racks(20));
  PlacementRequest r{.id = "j", .gpus = 8};
  OversubscribedWatts c = CountOversubscribed(t, r, Steering(), TelemetryState::kFresh);
  ASSERT_TRUE(c.applied);
  EXPECT_DOUBLE_EQ(c.declared_watts_per_gpu, 962.5);  // (10200 - 2500) / 8
  EXPECT_DOUBLE_EQ(c.counted_watts_per_gpu, 770);
  EXPECT_DOUBLE_EQ(WithOversubscription(r, c).watts_per_gpu, 770);
  r.watts_per_gpu = 600;
  EXPECT_DOUBLE_EQ(CountOversubscribed(t, r, Steering(), TelemetryState::kFresh).counted_watts_per_gpu, 480);
}

TEST(OversubscriptionTest, MoreJobsFitUnderTheSameCap) {
  // 30 kW, 10 kW idle: 20 kW at 962.5 W per GPU holds two 8-GPU jobs (23.1 kW for three); at 770 W, three.
  auto jobs_that_fit = [](double pct) {
    Topology t = *Topology::Build(H100Racks(pct));
    Ledger l(t);
    int placed = 0;
    for (int i = 0; i < 4; ++i) {
      PlacementRequest r{.id = "j" + std::to_string(i), .gpus = 8, .gpus_per_node = 8};
      r = WithOversubscription(r, CountOversubscribed(t, r, Steering(), TelemetryState::kFresh));
      auto out = Placer::Place(l, r);
      if (!out.ok() || !std::holds_alternative<PlacementDecision>(*out)) break;
      if (!l.Commit(std::get<PlacementDecision>(*out).ToAllocation(r.id)).ok()) break;
      ++placed;
    }
    return placed;
  };
  EXPECT_EQ(jobs_that_fit(0), 2);
  EXPECT_EQ(jobs_that_fit(20), 3);  // 3 x 8 x 770 W = 18.5 kW
}

TEST(OversubscriptionTest, NotAppliedWithoutSteeringFreshTelemetryOrOneDefault) {
  Topology t = *Topology::Build(H100Racks(20));
  PlacementRequest r{.id = "j", .gpus = 8};
  TelemetrySettings off;
  EXPECT_FALSE(CountOversubscribed(t, r, off, TelemetryState::kOff).applied);
  EXPECT_NE(CountOversubscribed(t, r, off, TelemetryState::kOff).why_not.find("needs steering"), std::string::npos);
  OversubscribedWatts stale = CountOversubscribed(t, r, Steering(), TelemetryState::kStale);
  EXPECT_FALSE(stale.applied);
  EXPECT_EQ(stale.why_not, "oversubscription is off while telemetry is stale: jobs count their declared watts");
  EXPECT_DOUBLE_EQ(WithOversubscription(r, stale).watts_per_gpu, 0);
  Topology none = *Topology::Build(H100Racks(0));
  EXPECT_FALSE(CountOversubscribed(none, r, Steering(), TelemetryState::kFresh).applied);
  EXPECT_TRUE(CountOversubscribed(none, r, Steering(), TelemetryState::kFresh).why_not.empty());
}

TEST(OversubscriptionTest, NeverCountsBelowWhatTheNodeTypeLetsAJobDeclare) {
  v1::ClusterDescription d = H100Racks(50);
  d.mutable_policy()->set_min_watts_per_gpu(500);
  Topology t = *Topology::Build(d);
  PlacementRequest r{.id = "j", .gpus = 8, .watts_per_gpu = 700};
  EXPECT_DOUBLE_EQ(CountOversubscribed(t, r, Steering(), TelemetryState::kFresh).counted_watts_per_gpu, 500);
}

TEST(OversubscriptionTest, MixedDefaultsNeedTheJobsWatts) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({.system = ReferenceSystem::kHgxH100, .racks = 1, .nodes_per_rack = 2, .rack_cap_kw = 30});
  spec.blocks.push_back({.system = ReferenceSystem::kHgxB200, .racks = 1, .nodes_per_rack = 2, .rack_cap_kw = 40});
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_oversubscribe_pct(10);
  Topology t = *Topology::Build(d);
  PlacementRequest r{.id = "j", .gpus = 8};
  OversubscribedWatts c = CountOversubscribed(t, r, Steering(), TelemetryState::kFresh);
  EXPECT_FALSE(c.applied);
  EXPECT_NE(c.why_not.find("different defaults"), std::string::npos);
  r.node_type = 1;
  EXPECT_TRUE(CountOversubscribed(t, r, Steering(), TelemetryState::kFresh).applied);
}

}  // namespace
}  // namespace rackwise
