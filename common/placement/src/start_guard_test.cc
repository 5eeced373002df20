// CommitWithinUsableCaps: the reserve is held where the ledger alone would only hold the whole cap; checked
// against hand-computed cases and, on random allocation streams, against an independent recount of the draws.
#include "rackwise/start_guard.h"

#include <gtest/gtest.h>

#include <bit>
#include <random>

#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

// One rack of 4 HGX H100 nodes (2.5 kW idle each, 962.5 W per GPU) in a row of two racks.
Topology Build(double rack_kw, double row_kw, int reserve_pct) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, rack_kw, 8, 2, row_kw});
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_power_reserve_pct(reserve_pct);
  auto t = Topology::Build(d);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

TEST(StartGuardTest, HoldsTheRackReserveWhereTheLedgerHoldsOnlyTheCap) {
  // 30 kW rack, 20% reserve: 24 kW usable, 14 kW above the 10 kW idle = 14 GPUs; the whole cap allows 20.
  Topology t = Build(30, 0, 20);
  Ledger l(t);
  ASSERT_TRUE(CommitWithinUsableCaps(l, {"a", {{0, 0xff}, {1, 0x3f}}, 0}).ok());  // 14 GPUs
  const Milliwatts draw = l.rack_draw(0);
  absl::Status s = CommitWithinUsableCaps(l, {"b", {{2, 0x1}}, 0});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("rack b0-r0000"), std::string::npos) << s;
  EXPECT_NE(s.message().find("usable cap 24.0 kW"), std::string::npos) << s;
  EXPECT_EQ(l.rack_draw(0), draw);  // nothing changed
  EXPECT_EQ(l.Find("b"), nullptr);
  EXPECT_TRUE(l.Commit({"b", {{2, 0x1}}, 0}).ok());  // the ledger alone lets it through: the defect
}

TEST(StartGuardTest, HoldsThePowerDomainReserve) {
  // Racks uncapped; the row has 20 kW above 20 kW idle: 40 kW, 10% reserve = 36 kW usable = 16 kW = 16 GPUs.
  Topology t = Build(0, 40, 10);
  Ledger l(t);
  ASSERT_TRUE(CommitWithinUsableCaps(l, {"a", {{0, 0xff}, {4, 0xff}}, 0}).ok());
  absl::Status s = CommitWithinUsableCaps(l, {"b", {{5, 0x1}}, 0});
  EXPECT_NE(s.message().find("power domain"), std::string::npos) << s;
  EXPECT_TRUE(l.CheckInvariants().ok());
}

TEST(StartGuardTest, CheckLeavesNothingBehindAndReplayIsANoOp) {
  Topology t = Build(30, 0, 20);
  Ledger l(t);
  const Allocation a{"a", {{0, 0xf}}, 0};
  EXPECT_TRUE(CheckWithinUsableCaps(l, a).ok());
  EXPECT_EQ(l.allocation_count(), 0u);
  ASSERT_TRUE(CommitWithinUsableCaps(l, a).ok());
  EXPECT_TRUE(CommitWithinUsableCaps(l, a).ok());
  EXPECT_EQ(l.allocation_count(), 1u);
  EXPECT_FALSE(CheckWithinUsableCaps(l, a).ok());  // the probe id must be new
}

// Random allocations of random sizes and watts: accepted exactly when an independent recount of every rack
// and the row (idle + held GPUs x watts) stays within cap x (1 - reserve) and no GPU is held twice.
TEST(StartGuardTest, AgreesWithAnIndependentRecount) {
  std::mt19937 rng(12);
  for (int round = 0; round < 200; ++round) {
    const int reserve = std::uniform_int_distribution<int>(0, 30)(rng);
    Topology t = Build(std::uniform_int_distribution<int>(12, 31)(rng),
                       std::uniform_int_distribution<int>(0, 1)(rng) ? 0 : 45, reserve);
    Ledger l(t);
    std::vector<Milliwatts> rack_draw(t.racks().size());
    for (size_t r = 0; r < rack_draw.size(); ++r) rack_draw[r] = t.racks()[r].idle;
    std::vector<GpuMask> held(t.nodes().size(), 0);
    for (int step = 0; step < 12; ++step) {
      Allocation a{"j" + std::to_string(step), {}, std::uniform_int_distribution<int>(0, 1)(rng) ? 0 : 700'000};
      for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
        if (std::uniform_int_distribution<int>(0, 3)(rng) == 0)
          a.nodes.push_back({n, static_cast<GpuMask>(std::uniform_int_distribution<int>(1, 255)(rng))});
      }
      if (a.nodes.empty()) continue;
      std::vector<Milliwatts> after = rack_draw;
      bool overlap = false;
      for (const NodeGpus& ng : a.nodes) {
        overlap |= (held[ng.node] & ng.gpus) != 0;
        after[t.nodes()[ng.node].rack] += std::popcount(ng.gpus) * (a.per_gpu ? a.per_gpu : t.type_of(ng.node).per_gpu);
      }
      const double keep = 1.0 - t.policy().power_reserve_fraction;
      bool fits = !overlap;
      Milliwatts row = 0;
      for (size_t r = 0; r < after.size(); ++r) {
        row += after[r];
        fits &= after[r] <= static_cast<Milliwatts>(static_cast<double>(t.racks()[r].cap) * keep);
      }
      for (const PowerDomain& pd : t.power_domains())
        fits &= row <= static_cast<Milliwatts>(static_cast<double>(pd.cap) * keep);
      const absl::Status checked = CheckWithinUsableCaps(l, a);  // read-only: the same answer, nothing held
      ASSERT_EQ(checked.ok(), fits) << "round " << round << " step " << step << ": " << checked;
      ASSERT_EQ(l.Find(a.id), nullptr);
      for (size_t r = 0; r < rack_draw.size(); ++r) ASSERT_EQ(l.rack_draw(r), rack_draw[r]);
      const absl::Status s = CommitWithinUsableCaps(l, a);
      ASSERT_EQ(s.ok(), fits) << "round " << round << " step " << step << ": " << s;
      ASSERT_EQ(s.message(), checked.message());
      if (s.ok()) {
        rack_draw = after;
        for (const NodeGpus& ng : a.nodes) held[ng.node] |= ng.gpus;
      }
      for (size_t r = 0; r < rack_draw.size(); ++r) ASSERT_EQ(l.rack_draw(r), rack_draw[r]);
    }
  }
}

TEST(StartGuardTest, AStartedJobIsJudgedByWhatWasApproved) {
  // 30 kW rack, 20% reserve: 14 GPUs of headroom under the usable cap.
  Topology t = Build(30, 0, 20);
  Ledger l(t);
  const Allocation within{"a", {{0, 0xff}}, 0};
  StartJudgement j = CommitStartedJob(l, within, nullptr);
  EXPECT_EQ(j.verdict, StartVerdict::kWithinCaps);
  EXPECT_TRUE(j.why.ok() && j.record.ok());
  // 8 more GPUs pass the usable cap. Approved with the same footprint (other indices on the same node): the ledger
  // moved since the approval; not approved, or approved elsewhere: a path around the core.
  const Allocation over{"b", {{1, 0xff}}, 0};
  EXPECT_FALSE(SamePowerFootprint(over, Allocation{"b", {{1, 0x0f}}, 0}));  // 4 GPUs, not 8
  EXPECT_FALSE(SamePowerFootprint(over, Allocation{"b", {{2, 0xff}}, 0}));  // another node
  EXPECT_TRUE(SamePowerFootprint(over, Allocation{"x", {{1, 0xff}}, 0}));   // the id is not compared
  for (const Allocation* approved : {static_cast<const Allocation*>(nullptr), &within}) {
    Ledger fresh(t);
    ASSERT_TRUE(CommitWithinUsableCaps(fresh, within).ok());
    const StartJudgement k = CommitStartedJob(fresh, over, approved);
    EXPECT_EQ(k.verdict, StartVerdict::kOutsidePlacement);
    EXPECT_NE(k.why.message().find("usable cap"), std::string::npos) << k.why;
    EXPECT_TRUE(k.record.ok());
    EXPECT_NE(fresh.Find("b"), nullptr);  // recorded all the same: nothing else may take that power
  }
  // Approved as 8 GPUs of node 1 when that fitted (the ledger has since taken job a): the same footprint.
  const Allocation approved{"b", {{1, 0xff}}, 0};
  const StartJudgement moved = CommitStartedJob(l, over, &approved);
  EXPECT_EQ(moved.verdict, StartVerdict::kLedgerMovedSince);
  EXPECT_NE(l.Find("b"), nullptr);
  // Declared watts count: the same GPUs at other watts are another footprint.
  EXPECT_FALSE(SamePowerFootprint(over, Allocation{"b", {{1, 0xff}}, 500'000}));
  // GPUs another allocation holds cannot be recorded at all: said, and the ledger is unchanged.
  const StartJudgement clash = CommitStartedJob(l, Allocation{"c", {{0, 0x1}}, 0}, nullptr);
  EXPECT_FALSE(clash.record.ok());
  EXPECT_EQ(l.Find("c"), nullptr);
  EXPECT_TRUE(l.CheckInvariants().ok());
}

}  // namespace
}  // namespace rackwise
