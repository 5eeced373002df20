// ApplyClusterState / CaptureClusterState: a restart rebuilds exactly the ledger it had.
#include "rackwise/cluster_state.h"

#include <gtest/gtest.h>

#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

TEST(ClusterStateTest, CaptureThenApplyRebuildsTheSameLedger) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 0, 8, 2, 0});
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

TEST(ClusterStateTest, RecordsRunningWorkEvenOverALoweredCap) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 1, 4, 0, 8, 0, 0});
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
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 1, 2, 0, 8, 0, 0});
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
