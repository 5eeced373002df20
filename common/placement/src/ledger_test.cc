// Ledger: idempotent commits, exact release, power and health enforcement, index consistency.
#include "rackwise/ledger.h"

#include <gtest/gtest.h>

#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

Topology SmallHgx(double rack_cap_kw = 0) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, rack_cap_kw, 2, 2, 0});
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

TEST(LedgerTest, StartsAtIdleDraw) {
  Topology t = SmallHgx();
  Ledger l(t);
  EXPECT_EQ(l.rack_draw(0), 4 * 2'500'000);
  EXPECT_EQ(l.free_gpu_count(0), 8);
  EXPECT_EQ(l.domain_free_gpus(0), 8);
  EXPECT_TRUE(l.CheckInvariants().ok());
}

TEST(LedgerTest, CommitChargesDefaultWattsAndReleaseRestores) {
  Topology t = SmallHgx();
  Ledger l(t);
  const Milliwatts before = l.rack_draw(0);
  ASSERT_TRUE(l.Commit({"job1", {{0, 0b1111}}, 0}).ok());
  // (10200 - 2500) / 8 = 962.5 W per GPU.
  EXPECT_EQ(l.rack_draw(0), before + 4 * 962'500);
  EXPECT_EQ(l.free_gpu_count(0), 4);
  EXPECT_TRUE(l.CheckInvariants().ok());
  EXPECT_TRUE(l.Release("job1"));
  EXPECT_EQ(l.rack_draw(0), before);
  EXPECT_EQ(l.free_gpu_count(0), 8);
  EXPECT_FALSE(l.Release("job1"));  // unknown: harmless
  EXPECT_TRUE(l.CheckInvariants().ok());
}

TEST(LedgerTest, SameIdTwiceIsNotDoubleCounted) {
  Topology t = SmallHgx();
  Ledger l(t);
  Allocation a{"job1", {{0, 0b11}, {1, 0b11}}, 800'000};
  ASSERT_TRUE(l.Commit(a).ok());
  const Milliwatts draw = l.rack_draw(0);
  ASSERT_TRUE(l.Commit(a).ok());
  EXPECT_EQ(l.rack_draw(0), draw);
  EXPECT_EQ(l.allocation_count(), 1u);
  Allocation other = a;
  other.nodes[0].gpus = 0b1100;
  EXPECT_EQ(l.Commit(other).code(), absl::StatusCode::kAlreadyExists);
}

TEST(LedgerTest, RefusesGpuHeldTwice) {
  Topology t = SmallHgx();
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0b0110}}, 0}).ok());
  absl::Status s = l.Commit({"b", {{0, 0b0100}}, 0});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("held by another allocation"), std::string::npos) << s;
  EXPECT_EQ(l.Commit({"b", {{0, 0b0100}}, 0}, CommitMode::kRecover).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(LedgerTest, RejectsMalformedAllocations) {
  Topology t = SmallHgx();
  Ledger l(t);
  EXPECT_EQ(l.Commit({"", {{0, 1}}, 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l.Commit({"x", {}, 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l.Commit({"x", {{999, 1}}, 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l.Commit({"x", {{0, 1u << 8}}, 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l.Commit({"x", {{0, 1}, {0, 2}}, 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l.Commit({"x", {{0, 0}}, 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l.allocation_count(), 0u);
  EXPECT_TRUE(l.CheckInvariants().ok());
}

TEST(LedgerTest, EnforcesRackCapButRecoveryRecordsWhatRuns) {
  // 4 nodes idle at 10 kW; a 20 kW cap leaves 10 kW: 10 GPUs at 962.5 W.
  Topology t = SmallHgx(20);
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0xff}}, 0}).ok());
  absl::Status s = l.Commit({"b", {{1, 0b111}}, 0});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("rack b0-r0000 would need 2.9 kW, 2.3 kW left"), std::string::npos) << s;
  EXPECT_TRUE(l.Commit({"b", {{1, 0b111}}, 0}, CommitMode::kRecover).ok());
  EXPECT_GT(l.rack_draw(0), l.rack_cap(0));
  EXPECT_EQ(l.RackHeadroom(0), 0);
}

TEST(LedgerTest, EnforcesPowerDomainCap) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 0, 2, 2, /*row_cap_kw=*/25});  // idle 20 kW in the row
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  ASSERT_TRUE(t.ok());
  Ledger l(*t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0xf}}, 1'000'000}).ok());
  absl::Status s = l.Commit({"b", {{4, 0x3}}, 1'000'000});  // rack 1, same row: 4 + 2 kW > 5 kW
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("power domain b0-row00"), std::string::npos) << s;
  EXPECT_EQ(l.RackHeadroom(1), 1'000'000);
}

TEST(LedgerTest, HealthAndFailedGpusLeaveTheIndex) {
  Topology t = SmallHgx();
  Ledger l(t);
  l.SetNodeHealth(0, NodeHealth::kDrained);
  EXPECT_EQ(l.free_gpu_count(0), 0);
  EXPECT_EQ(l.Commit({"a", {{0, 1}}, 0}).code(), absl::StatusCode::kFailedPrecondition);
  l.SetNodeHealth(0, NodeHealth::kUp);
  l.SetGpuFailed(0, 3, true);
  EXPECT_EQ(l.free_gpu_count(0), 7);
  EXPECT_EQ(l.Commit({"a", {{0, 1u << 3}}, 0}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(l.DomainsWithFree(0, 7).size(), 1u);
  l.SetGpuFailed(0, 3, false);
  EXPECT_EQ(l.DomainsWithFree(0, 7).size(), 0u);
  // A down node keeps its running allocation and its draw.
  ASSERT_TRUE(l.Commit({"a", {{0, 1}}, 0}).ok());
  const Milliwatts draw = l.rack_draw(0);
  l.SetNodeHealth(0, NodeHealth::kDown);
  EXPECT_EQ(l.rack_draw(0), draw);
  EXPECT_TRUE(l.CheckInvariants().ok());
}

TEST(LedgerTest, ReplaceKeepsTheOldAllocationOnFailure) {
  Topology t = SmallHgx(20);
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0b1}}, 0}).ok());
  EXPECT_FALSE(l.Replace({"a", {{0, 0xff}, {1, 0xff}}, 0}).ok());  // over the cap
  ASSERT_NE(l.Find("a"), nullptr);
  EXPECT_EQ(l.Find("a")->nodes[0].gpus, 0b1u);
  EXPECT_TRUE(l.Replace({"a", {{0, 0b11}}, 0}).ok());
  EXPECT_EQ(l.Find("a")->nodes[0].gpus, 0b11u);
  EXPECT_TRUE(l.CheckInvariants().ok());
}

TEST(LedgerTest, LoweredCapStopsNewWorkOnly) {
  Topology t = SmallHgx();
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0xff}}, 0}).ok());
  l.SetRackCap(0, 10'000'000);  // below the current draw
  EXPECT_NE(l.Find("a"), nullptr);
  EXPECT_EQ(l.RackHeadroom(0), 0);
  EXPECT_EQ(l.Commit({"b", {{1, 1}}, 0}).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace rackwise
