// Gang reservations: the whole group is planned at once inside one NVLink domain when it fits, slots are
// assigned at bind, unbound slots expire, finished pods free exactly their GPUs.
#include "gang_reservations.h"

#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rackwise/synthetic_cluster.h"

namespace rackwise::k8s {
namespace {

class GangTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SyntheticClusterSpec spec;
    spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 2, 18});
    auto t = Topology::Build(BuildSyntheticCluster(spec));
    ASSERT_TRUE(t.ok()) << t.status();
    topology_ = std::make_unique<Topology>(std::move(*t));
    ledger_ = std::make_unique<Ledger>(*topology_);
    gangs_ = std::make_unique<GangReservations>(ledger_.get());
  }
  PlacementRequest PerPod(int gpus) {
    PlacementRequest r;
    r.gpus = gpus;
    r.locality = Locality::kRequired;
    return r;
  }
  std::unique_ptr<Topology> topology_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<GangReservations> gangs_;
};

TEST_F(GangTest, PlansTheWholeGroupInOneDomain) {
  auto outcome = gangs_->Ensure("ns/group/a", 16, PerPod(4), 0, 1000);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_TRUE(std::holds_alternative<PlacementDecision>(*outcome));
  const GangReservation* r = gangs_->Find("ns/group/a");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->slots.size(), 16u);
  EXPECT_EQ(r->free_slots(), 16);
  std::set<DomainId> domains;
  for (const GangSlot& s : r->slots) domains.insert(topology_->nodes()[s.node].domain);
  EXPECT_EQ(domains.size(), 1u);
  EXPECT_EQ(ledger_->allocation_count(), 16u);
  EXPECT_TRUE(ledger_->CheckInvariants().ok());
}

TEST_F(GangTest, SmallPodsShareNodes) {
  auto outcome = gangs_->Ensure("ns/group/b", 8, PerPod(1), 0, 1000);
  ASSERT_TRUE(outcome.ok());
  const GangReservation* r = gangs_->Find("ns/group/b");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->slots.size(), 8u);
  std::set<NodeId> nodes;
  for (const GangSlot& s : r->slots) nodes.insert(s.node);
  EXPECT_LE(nodes.size(), 2u);  // 8 one-GPU pods on 4-GPU trays
}

// Free GPUs in odd counts: the core splits the group in whole pods per node in one plan. Rack 1 is full; in
// rack 0 one tray has 4 GPUs free, two have 3 and the rest none. Four pods of 2 fit as 4 + 2 + 2; a split that
// ignores pods (4 + 3 + 1) does not divide into pods, and 2 on each node finds only three nodes.
TEST_F(GangTest, OddFreeCountsAreSplitInWholePods) {
  const Milliwatts per_gpu = topology_->node_types()[0].per_gpu;
  auto busy = [&](NodeId node, GpuMask gpus) {
    Allocation a;
    a.id = "busy" + std::to_string(node);
    a.nodes.push_back({node, gpus});
    a.per_gpu = per_gpu;
    ASSERT_TRUE(ledger_->Commit(a).ok());
  };
  const RackId full = 1, partial = 0;
  for (NodeId n : topology_->racks()[full].nodes) busy(n, 0xF);
  const std::vector<NodeId>& trays = topology_->racks()[partial].nodes;
  busy(trays[1], 0x1);  // 3 free
  busy(trays[2], 0x8);  // 3 free
  for (size_t i = 3; i < trays.size(); ++i) busy(trays[i], 0xF);

  auto outcome = gangs_->Ensure("ns/group/odd", 4, PerPod(2), 0, 1000);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_TRUE(std::holds_alternative<PlacementDecision>(*outcome)) << std::get<PlacementRefusal>(*outcome).Message();
  const GangReservation* r = gangs_->Find("ns/group/odd");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->slots.size(), 4u);
  std::map<NodeId, int> pods_on;
  for (const GangSlot& s : r->slots) {
    EXPECT_EQ(std::popcount(s.gpus), 2);
    ++pods_on[s.node];
  }
  EXPECT_EQ(pods_on, (std::map<NodeId, int>{{trays[0], 2}, {trays[1], 1}, {trays[2], 1}}));
  EXPECT_TRUE(ledger_->CheckInvariants().ok());
}

TEST_F(GangTest, AssignExpireAndRelease) {
  ASSERT_TRUE(gangs_->Ensure("g", 4, PerPod(4), 0, 1000).ok());
  const GangReservation* r = gangs_->Find("g");
  NodeId n0 = r->slots[0].node;
  auto slot = gangs_->Assign("g", "ns/p0", n0, 10, 1000);
  ASSERT_TRUE(slot.has_value());
  EXPECT_EQ(gangs_->Assign("g", "ns/p0", n0, 20, 1000)->allocation_id, slot->allocation_id);  // idempotent
  EXPECT_EQ(gangs_->Expire(500), 0);   // deadline moved to 1010 by the assignment
  EXPECT_EQ(gangs_->Expire(1010), 3);  // the three unbound slots go
  EXPECT_EQ(ledger_->allocation_count(), 1u);
  EXPECT_TRUE(gangs_->ReleasePod("g", "ns/p0"));
  EXPECT_EQ(ledger_->allocation_count(), 0u);
  EXPECT_EQ(gangs_->Find("g"), nullptr);
  EXPECT_TRUE(ledger_->CheckInvariants().ok());
}

TEST_F(GangTest, RefusalBooksNothing) {
  auto outcome = gangs_->Ensure("huge", 100, PerPod(4), 0, 1000);  // 400 GPUs > 144
  ASSERT_TRUE(outcome.ok());
  ASSERT_TRUE(std::holds_alternative<PlacementRefusal>(*outcome));
  EXPECT_EQ(gangs_->Find("huge"), nullptr);
  EXPECT_EQ(ledger_->allocation_count(), 0u);
}

TEST_F(GangTest, AdoptBooksRunningPodsAfterRestart) {
  ASSERT_TRUE(gangs_->Adopt("g", 2, "ns/p0", 0, 0xF, 0).ok());
  ASSERT_TRUE(gangs_->Adopt("g", 2, "ns/p0", 0, 0xF, 0).ok());  // replay is harmless
  EXPECT_EQ(ledger_->allocation_count(), 1u);
  // The missing pod is planned on demand.
  ASSERT_TRUE(gangs_->Ensure("g", 2, PerPod(4), 0, 1000).ok());
  EXPECT_EQ(gangs_->Find("g")->slots.size(), 2u);
  EXPECT_EQ(gangs_->Find("g")->free_slots(), 1);
}

}  // namespace
}  // namespace rackwise::k8s
