// Ledger: idempotent commits, exact release, power and health enforcement, index consistency.
#include "rackwise/ledger.h"
#include "placement_indexes.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

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
  EXPECT_EQ(internal::IndexesOf(l).DomainsWithFree(0, 7).size(), 1u);
  l.SetGpuFailed(0, 3, false);
  EXPECT_EQ(internal::IndexesOf(l).DomainsWithFree(0, 7).size(), 0u);
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

// The headroom index against a pass over every rack and its power chain, after every kind of change: commits and
// releases of random shapes and watts, caps raised and lowered at run time, measured draws, health, with a
// reserve. CheckInvariants also checks the power groups (GroupNodesWithFree at every rack's room) and the
// per-type tallies against counts made from scratch.
TEST(LedgerHeadroomProperty, MaxRackHeadroomEqualsAPassOverEveryRack) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 6, 4, 40, 8, 2, 70});  // rows of 2 under the hall
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 3, 2, 25, 8, 0, 0});   // racks under no row
  spec.hall_cap_kw = 260;
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_power_reserve_pct(5);
  absl::StatusOr<Topology> built = Topology::Build(d);
  ASSERT_TRUE(built.ok()) << built.status();
  const Topology& t = *built;
  const double reserve = t.policy().power_reserve_fraction;
  auto by_pass = [&](const Ledger& l) {
    Milliwatts best = internal::PlacementIndexes::kNoHeadroom;
    for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
      Milliwatts h = l.RackRoom(r, reserve);
      for (PowerDomainId p : t.racks()[r].power_chain) h = std::min(h, l.PowerDomainRoom(p, reserve));
      best = std::max(best, h);
    }
    return best;
  };
  std::mt19937 rng(11);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  Ledger l(t);
  std::vector<std::string> held;
  for (int step = 0; step < 4000; ++step) {
    const int what = pick(10);
    if (what < 5) {  // a commit of 1-3 nodes, in recovery mode half the time so that caps end up exceeded
      Allocation a{"a" + std::to_string(step), {}, static_cast<Milliwatts>(pick(3)) * 350'000};
      const NodeId first = pick(static_cast<int>(t.nodes().size()));
      for (int i = 0, n = 1 + pick(3); i < n && first + i < static_cast<NodeId>(t.nodes().size()); ++i)
        a.nodes.push_back({first + i, static_cast<GpuMask>(1 + pick(255))});
      if (l.Commit(a, pick(2) ? CommitMode::kEnforce : CommitMode::kRecover).ok()) held.push_back(a.id);
    } else if (what < 7 && !held.empty()) {
      const int i = pick(static_cast<int>(held.size()));
      l.Release(held[i]);
      held.erase(held.begin() + i);
    } else if (what == 7) {  // health: what the power groups count moves without any draw changing
      const NodeId n = pick(static_cast<int>(t.nodes().size()));
      if (pick(2)) {
        l.SetNodeHealth(n, static_cast<NodeHealth>(pick(3)));
      } else {
        l.SetGpuFailed(n, pick(8), pick(2) == 1);
      }
    } else if (what == 8) {
      if (pick(2)) {
        l.SetRackCap(pick(static_cast<int>(t.racks().size())), static_cast<Milliwatts>(5 + pick(40)) * 1'000'000);
      } else {
        l.SetPowerDomainCap(pick(static_cast<int>(t.power_domains().size())),
                            static_cast<Milliwatts>(20 + pick(250)) * 1'000'000);
      }
    } else {
      std::vector<std::optional<Milliwatts>> readings(t.racks().size());
      for (auto& m : readings) {
        if (pick(2)) m = static_cast<Milliwatts>(5 + pick(40)) * 1'000'000;
      }
      l.SetMeasuredDraw(readings, pick(3) * 0.2, pick(2) == 1);
    }
    ASSERT_EQ(internal::IndexesOf(l).MaxRackHeadroom(), by_pass(l)) << "step " << step << " kind " << what;
    ASSERT_TRUE(l.CheckInvariants().ok()) << "step " << step << ": " << l.CheckInvariants();
  }
  // A copy keeps its own index.
  Ledger copy = l;
  ASSERT_TRUE(copy.Release(held.front()) || held.empty());
  EXPECT_EQ(internal::IndexesOf(copy).MaxRackHeadroom(), by_pass(copy));
  EXPECT_EQ(internal::IndexesOf(l).MaxRackHeadroom(), by_pass(l));
}

}  // namespace
}  // namespace rackwise
