// The steering replay on a small capped cluster: rackwise as it is never leaves a cap; steering with
// oversubscription runs more work and keeps each excursion within one telemetry interval; bad options are refused.
#include "rackwise/steering_replay.h"

#include <gtest/gtest.h>

#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

Topology SmallCappedH100(double oversubscribe_pct) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({.system = ReferenceSystem::kHgxH100,
                         .racks = 4,
                         .nodes_per_rack = 4,
                         .rack_cap_kw = 30,
                         .racks_per_row = 2,
                         .row_cap_kw = 55});
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_oversubscribe_pct(oversubscribe_pct);
  return *Topology::Build(d);
}

SteeringReplayReport Replay(SteeringMode mode, double oversubscribe_pct) {
  const Topology t = SmallCappedH100(oversubscribe_pct);
  SteeringReplayOptions o;
  o.mode = mode;
  o.horizon_s = 3 * 3600;
  absl::StatusOr<SteeringReplayReport> r = ReplaySteering(t, GenerateSteeringWorkload(t, 60, 3), o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.value_or(SteeringReplayReport{});
}

TEST(SteeringReplayTest, DeclaredWattsNeverLeaveACap) {
  const SteeringReplayReport r = Replay(SteeringMode::kDeclared, 0);
  EXPECT_GT(r.work_gpu_hours, 0);
  EXPECT_GT(r.started, 0);
  EXPECT_EQ(r.excursions, 0);
  EXPECT_EQ(r.excursion_kws, 0);
  EXPECT_EQ(r.requeued, 0);
  EXPECT_EQ(r.mean_held_jobs, 0);
}

TEST(SteeringReplayTest, SteeringWithOversubscriptionRunsMoreAndEveryExcursionEndsWithinOneInterval) {
  const SteeringReplayReport declared = Replay(SteeringMode::kDeclared, 0);
  const SteeringReplayReport steer = Replay(SteeringMode::kSteer, 30);
  EXPECT_GT(steer.work_gpu_hours, declared.work_gpu_hours);
  EXPECT_GT(steer.mean_running_gpus, declared.mean_running_gpus);
  EXPECT_LE(steer.longest_excursion_s, 15);
  EXPECT_GT(steer.mean_held_jobs, 0);
}

TEST(SteeringReplayTest, RefusesBadOptionsAndJobs) {
  const Topology t = SmallCappedH100(0);
  SteeringReplayOptions o;
  o.interval_s = 0;
  EXPECT_EQ(ReplaySteering(t, {}, o).status().code(), absl::StatusCode::kInvalidArgument);
  o = {};
  EXPECT_EQ(ReplaySteering(t, {SteeringReplayJob{.gpus = 0, .duration_s = 10}}, o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rackwise
