// GuaranteedSlices on hand-computed cases: an owner may borrow what the others leave beyond their unused slices;
// with every share 0 one owner may use the whole budget; the fallback caps are the simulator's static caps; the
// caps of a connected face admit what the rule admits; bad shares are refused.
#include "rackwise/guaranteed_slices.h"

#include <gtest/gtest.h>

#include "rackwise/start_guard.h"
#include "rackwise/static_share.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

// One row of two racks of 4 HGX H100 nodes (2.5 kW idle each, 962.5 W per GPU): each rack 30 kW (10 kW idle,
// a 20 kW budget), the row `row_kw`.
Topology Build(double row_kw = 0, int reserve_pct = 0) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 30, 8, 2, row_kw});
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_power_reserve_pct(reserve_pct);
  auto t = Topology::Build(d);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

// `gpus` GPUs of rack 0 (nodes 0..3) for `owner`, filling node after node from `first_node`.
Allocation Gpus(const std::string& owner, int gpus, NodeId first_node = 0) {
  Allocation a{owner, {}, 0};
  for (NodeId n = first_node; gpus > 0; ++n) {
    const int here = std::min(gpus, 8);
    a.nodes.push_back({n, static_cast<GpuMask>((1u << here) - 1)});
    gpus -= here;
  }
  return a;
}

// Reserves through the rule as the shared ledger does: the ledger's own checks, then the slices.
absl::Status Reserve(Ledger& ledger, GuaranteedSlices& slices, const Allocation& a) {
  if (absl::Status s = CheckWithinUsableCaps(ledger, a); !s.ok()) return s;
  if (absl::Status s = slices.Admit(ledger, a); !s.ok()) return s;
  if (absl::Status s = ledger.Commit(a); !s.ok()) return s;
  slices.Add(ledger, a);
  return absl::OkStatus();
}

TEST(GuaranteedSlicesTest, AnOwnerBorrowsAllButTheOthersUnusedSlice) {
  Topology t = Build();
  auto slices = GuaranteedSlices::Create(t, {{"slurm/c1/", 0.3}, {"k8s/", 0.5}});
  ASSERT_TRUE(slices.ok()) << slices.status();
  Ledger ledger(t);
  EXPECT_EQ(slices->budget(0), 20'000'000);
  EXPECT_EQ(slices->slice(0, 0), 6'000'000);
  EXPECT_EQ(slices->slice(1, 0), 10'000'000);
  // k8s may hold 20 - 6 = 14 kW: 14 GPUs (13.475 kW); the 15th would eat into Slurm's unused slice.
  ASSERT_TRUE(Reserve(ledger, *slices, Gpus("k8s/ns/a", 14)).ok());
  absl::Status refused = Reserve(ledger, *slices, {"k8s/ns/b", {{2, 0x40}}, 0});
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("rack 'b0-r0000'"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("6000 W more is kept free"), std::string::npos) << refused;
  // The ledger alone (the usable cap) would have taken it: the rule is what refused.
  EXPECT_TRUE(CheckWithinUsableCaps(ledger, {"k8s/ns/b", {{2, 0x40}}, 0}).ok());
  // Slurm's slice is free for it: 6 GPUs (5.775 kW) fit, a 7th does not (the rack is then full).
  EXPECT_TRUE(Reserve(ledger, *slices, {"slurm/c1/1", {{3, 0x3f}}, 0}).ok());
  EXPECT_FALSE(Reserve(ledger, *slices, {"slurm/c1/2", {{3, 0x40}}, 0}).ok());
}

TEST(GuaranteedSlicesTest, FullSharingLetsOneOwnerUseTheWholeBudget) {
  Topology t = Build();
  auto slices = GuaranteedSlices::Create(t, {{"slurm/c1/", 0}, {"k8s/", 0}});
  ASSERT_TRUE(slices.ok());
  Ledger ledger(t);
  // 20 kW budget: 20 GPUs (19.25 kW) of the rack, the other owner idle.
  ASSERT_TRUE(Reserve(ledger, *slices, Gpus("k8s/ns/a", 20)).ok());
  EXPECT_FALSE(Reserve(ledger, *slices, {"k8s/ns/b", {{2, 0x10}}, 0}).ok());
  // The fallback of a face with share 0 adds nothing: its caps are the idle draw.
  const ShareCaps fallback = slices->FallbackCaps(0);
  EXPECT_EQ(fallback.rack[0], t.racks()[0].idle);
}

TEST(GuaranteedSlicesTest, UnsharedOwnersHaveNoSlice) {
  Topology t = Build();
  auto slices = GuaranteedSlices::Create(t, {{"k8s/", 0.5}});
  ASSERT_TRUE(slices.ok());
  EXPECT_EQ(slices->ShareOf("slurm/c1/7"), slices->unshared());
  EXPECT_EQ(slices->ShareOf("k8s/ns/uid"), 0);
  Ledger ledger(t);
  // Slurm (no share) may take the budget less k8s's unused half: 10 GPUs, not 11.
  ASSERT_TRUE(Reserve(ledger, *slices, Gpus("slurm/c1/1", 10)).ok());
  EXPECT_FALSE(Reserve(ledger, *slices, {"slurm/c1/2", {{2, 0x10}}, 0}).ok());
  EXPECT_TRUE(Reserve(ledger, *slices, {"k8s/ns/a", {{2, 0x10}}, 0}).ok());
}

TEST(GuaranteedSlicesTest, FallbackCapsAreTheSimulatorsStaticCaps) {
  Topology t = Build(50, 10);
  auto slices = GuaranteedSlices::Create(t, {{"slurm/c1/", 0.35}, {"k8s/", 0.65}});
  ASSERT_TRUE(slices.ok());
  const double reserve = t.policy().power_reserve_fraction;
  for (int share = 0; share < 2; ++share) {
    const double k = slices->shares()[share].static_share;
    const ShareCaps caps = slices->FallbackCaps(share);
    for (RackId r = 0; r < 2; ++r)
      EXPECT_EQ(caps.rack[r], StaticShareCap(t.racks()[r].cap, t.racks()[r].idle, k, reserve));
    EXPECT_EQ(caps.power_domain[0], StaticShareCap(t.power_domains()[0].cap, t.power_domains()[0].idle, k, reserve));
  }
}

TEST(GuaranteedSlicesTest, FallbackCapsHoldAFaceToItsSlice) {
  Topology t = Build(0, 10);  // 10% reserve: 27 kW usable, 17 kW budget
  auto slices = GuaranteedSlices::Create(t, {{"slurm/c1/", 0.5}, {"k8s/", 0.5}});
  ASSERT_TRUE(slices.ok());
  Ledger own(t);  // a cut-off face's ledger: its own allocations only
  const ShareCaps caps = slices->FallbackCaps(1);
  for (RackId r = 0; r < 2; ++r) own.SetRackCap(r, caps.rack[r]);
  // 8.5 kW slice: 8 GPUs (7.7 kW) fit, a 9th (8.6625 kW) does not.
  EXPECT_TRUE(CommitWithinUsableCaps(own, Gpus("k8s/ns/a", 8)).ok());
  EXPECT_FALSE(CommitWithinUsableCaps(own, {"k8s/ns/b", {{1, 0x1}}, 0}).ok());
}

TEST(GuaranteedSlicesTest, ConnectedCapsAdmitWhatTheRuleAdmits) {
  Topology t = Build(45);
  auto slices = GuaranteedSlices::Create(t, {{"slurm/c1/", 0.4}, {"k8s/", 0.4}});
  ASSERT_TRUE(slices.ok());
  Ledger central(t);
  ASSERT_TRUE(Reserve(central, *slices, Gpus("slurm/c1/1", 3)).ok());
  ASSERT_TRUE(Reserve(central, *slices, {"other/x/1", {{7, 0xc0}}, 0}).ok());
  // The face's ledger: every allocation mirrored, caps less the others' unused slices.
  Ledger face(t);
  for (const Allocation* a : central.Allocations()) ASSERT_TRUE(face.Commit(*a, CommitMode::kRecover).ok());
  const ShareCaps caps = slices->ConnectedCaps(1);
  for (RackId r = 0; r < 2; ++r) face.SetRackCap(r, caps.rack[r]);
  face.SetPowerDomainCap(0, caps.power_domain[0]);
  for (int gpus = 1; gpus <= 16; ++gpus) {
    const Allocation a = Gpus("k8s/ns/a", gpus, 4);  // rack 1
    EXPECT_EQ(CheckWithinUsableCaps(face, a).ok(), slices->Admit(central, a).ok()) << gpus << " GPUs";
  }
}

TEST(GuaranteedSlicesTest, RefusesBadShares) {
  Topology t = Build();
  EXPECT_FALSE(GuaranteedSlices::Create(t, {{"slurm/", 0.6}, {"k8s/", 0.5}}).ok());
  EXPECT_FALSE(GuaranteedSlices::Create(t, {{"slurm/", 0.2}, {"slurm/c1/", 0.2}}).ok());
  EXPECT_FALSE(GuaranteedSlices::Create(t, {{"k8s/", -0.1}}).ok());
  EXPECT_FALSE(GuaranteedSlices::Create(t, {{"k8s/", std::nan("")}}).ok());
  EXPECT_FALSE(GuaranteedSlices::Create(t, {{"", 0.1}}).ok());
  EXPECT_TRUE(GuaranteedSlices::Create(t, {}).ok());
}

}  // namespace
}  // namespace rackwise
