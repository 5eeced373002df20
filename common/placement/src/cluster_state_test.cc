// ApplyClusterState / CaptureClusterState: a restart rebuilds exactly the ledger it had.
#include "rackwise/cluster_state.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

// Uncapped HGX racks of `nodes` nodes, `racks_per_row` racks per row power domain (0: none).
SyntheticClusterSpec HgxRacks(int racks, int nodes, int racks_per_row) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, racks, nodes, 0, 8, racks_per_row, 0});
  return spec;
}

TEST(ClusterStateTest, CaptureThenApplyRebuildsTheSameLedger) {
  const SyntheticClusterSpec spec = HgxRacks(2, 4, 2);
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  ASSERT_TRUE(t.ok());
  Ledger a(*t);
  ASSERT_TRUE(a.Commit({"j1", {{0, 0x0f}, {1, 0x0f}}, 650'000}).ok());
  ASSERT_TRUE(a.Commit({"j2", {{5, 0xff}}, 0}).ok());
  a.SetNodeHealth(3, NodeHealth::kDrained);
  a.SetGpuFailed(2, 7, true);
  a.SetRackCap(1, 30'000'000);
  a.SetPowerDomainCap(0, 70'000'000);

  const v1::ClusterState state = CaptureClusterState(a);
  EXPECT_EQ(state.allocations_size(), 2);
  Ledger b(*t);
  ASSERT_TRUE(ApplyClusterState(state, &b).ok());
  for (RackId r = 0; r < 2; ++r) {
    EXPECT_EQ(a.rack_draw(r), b.rack_draw(r));
    EXPECT_EQ(a.rack_cap(r), b.rack_cap(r));
  }
  EXPECT_EQ(a.power_domain_cap(0), b.power_domain_cap(0));
  for (NodeId n = 0; n < 8; ++n) {
    EXPECT_EQ(a.free_gpus(n), b.free_gpus(n));
    EXPECT_EQ(a.node_health(n), b.node_health(n));
  }
  EXPECT_EQ(*a.Find("j1"), *b.Find("j1"));
  EXPECT_TRUE(b.CheckInvariants().ok());
}

TEST(ClusterStateTest, MeasuredDrawTravelsWithTheStateAndCountsTheSame) {
  // What the writer counted (a reading, placements since, reclaim) is what a reader of its state file counts,
  // through the YAML text too: `rackwise status` on the Slurm plugin's file shows the plugin's view.
  const SyntheticClusterSpec spec = HgxRacks(3, 4, 3);
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  ASSERT_TRUE(t.ok());
  Ledger a(*t);
  ASSERT_TRUE(a.Commit({"j1", {{0, 0xff}, {1, 0xff}}, 0}).ok());
  a.SetMeasuredDraw({a.rack_draw(0) / 2, std::nullopt, a.rack_draw(2) + 3'000'000}, 0.25,
                    /*count_recent=*/false);
  ASSERT_TRUE(a.Commit({"j2", {{8, 0x0f}}, 0}).ok());  // placed after rack 2's reading: counts on top of it
  const v1::ClusterState state = CaptureClusterState(a);
  ASSERT_EQ(state.measured_size(), 2);
  EXPECT_DOUBLE_EQ(state.measured_reclaim_pct(), 25);

  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterState> parsed =
      ParseClusterState(ClusterStateToYaml(state), "state.yaml", BuildSyntheticCluster(spec), &diagnostics);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << (diagnostics.empty() ? "" : diagnostics[0].message);
  Ledger b(*t);
  ASSERT_TRUE(ApplyClusterState(*parsed, &b).ok());
  for (RackId r = 0; r < 3; ++r) {
    SCOPED_TRACE(r);
    EXPECT_EQ(a.measured_rack_draw_now(r), b.measured_rack_draw_now(r));
    EXPECT_EQ(a.counted_rack_draw(r), b.counted_rack_draw(r));
  }
  EXPECT_FALSE(b.measured_rack_draw_now(1).has_value());
  EXPECT_LT(b.counted_rack_draw(0), b.rack_draw(0));  // reclaimed below the estimate
  EXPECT_EQ(b.counted_power_domain_draw(0), a.counted_power_domain_draw(0));
}

TEST(ClusterStateTest, MeasuredDrawOfAnUnknownRackOrOutOfRangeIsAnError) {
  const SyntheticClusterSpec spec = HgxRacks(1, 4, 0);
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  ASSERT_TRUE(t.ok());
  for (auto [rack, kw, reclaim] : {std::tuple<std::string, double, double>{"nope", 10, 0},
                                   {t->racks()[0].name, -1, 0},
                                   {t->racks()[0].name, 1e300, 0},
                                   {t->racks()[0].name, 10, 60}}) {
    v1::ClusterState s;
    v1::RackReading* reading = s.add_measured();
    reading->set_rack(rack);
    reading->set_measured_kw(kw);
    s.set_measured_reclaim_pct(reclaim);
    Ledger l(*t);
    EXPECT_EQ(ApplyClusterState(s, &l).code(), absl::StatusCode::kInvalidArgument) << rack << " " << kw;
  }
}

TEST(ClusterStateTest, RecordsRunningWorkEvenOverALoweredCap) {
  const SyntheticClusterSpec spec = HgxRacks(1, 4, 0);
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  ASSERT_TRUE(t.ok());
  v1::ClusterState s;
  auto* cap = s.add_caps();
  cap->set_name(t->racks()[0].name);
  cap->set_power_cap_kw(12);
  auto* a = s.add_allocations();
  a->set_id("running");
  auto* ng = a->add_nodes();
  ng->set_node(t->nodes()[0].name);
  for (uint32_t g = 0; g < 8; ++g) ng->add_gpus(g);
  Ledger l(*t);
  ASSERT_TRUE(ApplyClusterState(s, &l).ok());
  EXPECT_GT(l.rack_draw(0), l.rack_cap(0));
  EXPECT_NE(l.Find("running"), nullptr);
}

TEST(ClusterStateTest, UnknownNamesAndDoubleBookingsAreErrors) {
  const SyntheticClusterSpec spec = HgxRacks(1, 2, 0);
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  ASSERT_TRUE(t.ok());
  v1::ClusterState s;
  s.add_nodes()->set_node("nope");
  Ledger l(*t);
  EXPECT_FALSE(ApplyClusterState(s, &l).ok());
  v1::ClusterState twice;
  for (const char* id : {"a", "b"}) {
    auto* a = twice.add_allocations();
    a->set_id(id);
    auto* ng = a->add_nodes();
    ng->set_node(t->nodes()[0].name);
    ng->add_gpus(3);
  }
  Ledger m(*t);
  absl::Status st = ApplyClusterState(twice, &m);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
}

}  // namespace
}  // namespace rackwise
