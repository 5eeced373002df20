// Placer: hand-checked cases for each objective. Random streams live in placer_property_test.cc.
#include "rackwise/placer.h"

#include <random>

#include <gtest/gtest.h>

#include <bit>
#include <set>

#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

Topology Build(const SyntheticClusterSpec& spec) {
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

Topology Nvl72(int racks, double cap_kw = 0, int racks_per_su = 8) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, racks, 18, cap_kw, racks_per_su, 0, 0});
  return Build(spec);
}

Topology Hgx(int racks, int nodes_per_rack = 4, double cap_kw = 0, int racks_per_su = 8) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, racks, nodes_per_rack, cap_kw, racks_per_su, 0, 0});
  return Build(spec);
}

PlacementRequest Req(int gpus, int per_node = 0, std::optional<Locality> loc = std::nullopt) {
  PlacementRequest r;
  r.id = "job";
  r.gpus = gpus;
  r.gpus_per_node = per_node;
  r.locality = loc;
  return r;
}

PlacementDecision MustPlace(const Ledger& l, const PlacementRequest& r) {
  auto out = Placer::Place(l, r);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok() || !std::holds_alternative<PlacementDecision>(*out)) {
    if (out.ok()) ADD_FAILURE() << std::get<PlacementRefusal>(*out).Message();
    return {};
  }
  return std::get<PlacementDecision>(*out);
}

PlacementRefusal MustRefuse(const Ledger& l, const PlacementRequest& r) {
  auto out = Placer::Place(l, r);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok() || !std::holds_alternative<PlacementRefusal>(*out)) {
    ADD_FAILURE() << "expected a refusal";
    return {};
  }
  return std::get<PlacementRefusal>(*out);
}

int Gpus(const PlacementDecision& d) {
  int n = 0;
  for (const NodeGpus& ng : d.nodes) n += std::popcount(ng.gpus);
  return n;
}

TEST(PlacerTest, JobThatFitsOneNvl72RackGetsOne) {
  Topology t = Nvl72(4);
  Ledger l(t);
  PlacementDecision d = MustPlace(l, Req(64));
  EXPECT_EQ(Gpus(d), 64);
  EXPECT_EQ(d.domains, 1);
  EXPECT_EQ(d.min_domains, 1);
  EXPECT_EQ(d.racks.size(), 1u);
  EXPECT_EQ(d.nodes.size(), 16u);  // whole trays first: 16 x 4
}

TEST(PlacerTest, BestFitKeepsWholeDomainsFree) {
  Topology t = Nvl72(3);
  Ledger l(t);
  // Rack 1 has 16 GPUs in use: a 48-GPU job belongs there, not in an empty rack.
  Allocation busy{"busy", {}, 0};
  for (int i = 0; i < 4; ++i) busy.nodes.push_back({t.racks()[1].nodes[i], 0xf});
  ASSERT_TRUE(l.Commit(busy).ok());
  PlacementDecision d = MustPlace(l, Req(48));
  ASSERT_EQ(d.racks.size(), 1u);
  EXPECT_EQ(d.racks[0].rack, 1);
}

TEST(PlacerTest, LargeJobTakesFewestDomainsInOneScalableUnit) {
  Topology t = Nvl72(6, 0, /*racks_per_su=*/3);
  Ledger l(t);
  // Make SU 0 fragmented (a few GPUs busy in each rack) so that SU 1 can hold 144 GPUs in 2 racks.
  for (int r = 0; r < 3; ++r)
    ASSERT_TRUE(l.Commit({"frag" + std::to_string(r), {{t.racks()[r].nodes[0], 0x1}}, 0}).ok());
  PlacementDecision d = MustPlace(l, Req(144));
  EXPECT_EQ(d.domains, 2);
  EXPECT_EQ(d.min_domains, 2);
  EXPECT_EQ(d.scalable_units, 1);
  for (const RackPower& rp : d.racks) EXPECT_EQ(t.racks()[rp.rack].scalable_unit, 1);
}

TEST(PlacerTest, MultiDomainJobTakesTheTightestDomainsAndLeavesWholeOnesFree) {
  Topology t = Nvl72(4);
  Ledger l(t);
  // Racks 0 and 1 have two trays busy (64 GPUs free each); racks 2 and 3 are empty. A 128-GPU job needs two
  // domains either way: it belongs in the two partly used racks, so that a later 144-GPU job still has two
  // whole racks. Largest-first would take rack 2 whole and 56 GPUs of another.
  for (int r = 0; r < 2; ++r) {
    Allocation busy{"busy" + std::to_string(r), {}, 0};
    for (int i = 0; i < 2; ++i) busy.nodes.push_back({t.racks()[r].nodes[i], 0xf});
    ASSERT_TRUE(l.Commit(busy).ok());
  }
  PlacementDecision d = MustPlace(l, Req(128, 4));
  EXPECT_EQ(d.domains, 2);
  std::set<RackId> racks;
  for (const RackPower& rp : d.racks) racks.insert(rp.rack);
  EXPECT_EQ(racks, (std::set<RackId>{0, 1}));
  Allocation a{"a", d.nodes, 0};
  ASSERT_TRUE(l.Commit(a).ok());
  EXPECT_EQ(MustPlace(l, Req(144, 4)).domains, 2);
}

TEST(PlacerTest, HgxMultiNodeJobUsesWholeNodesInOneRack) {
  Topology t = Hgx(4);
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0x1}}, 0}).ok());  // rack 0 is no longer whole
  PlacementDecision d = MustPlace(l, Req(32, 8));
  EXPECT_EQ(d.domains, 4);
  EXPECT_EQ(d.min_domains, 4);
  EXPECT_EQ(d.racks.size(), 1u);
  EXPECT_NE(d.racks[0].rack, 0);
  EXPECT_TRUE(d.rail_aligned);
}

TEST(PlacerTest, PartialNodeMultiNodeJobIsRailAligned) {
  Topology t = Hgx(1);
  Ledger l(t);
  // Different GPUs busy on each node; indices 4-7 are free on all four.
  ASSERT_TRUE(l.Commit({"a", {{0, 0b0001}, {1, 0b0010}, {2, 0b0100}, {3, 0b1000}}, 0}).ok());
  PlacementDecision d = MustPlace(l, Req(16, 4));
  ASSERT_EQ(d.nodes.size(), 4u);
  EXPECT_TRUE(d.rail_aligned);
  for (const NodeGpus& ng : d.nodes) EXPECT_EQ(ng.gpus, 0xf0u);
}

TEST(PlacerTest, BindingRackCapSendsJobElsewhereThenWaits) {
  // Rack cap 30 kW: 4 idle nodes = 10 kW, leaving 20 kW = 20 GPUs at 962.5 W.
  Topology t = Hgx(2, 4, 30);
  Ledger l(t);
  PlacementDecision first = MustPlace(l, Req(16, 8));
  ASSERT_TRUE(l.Commit(first.ToAllocation("first")).ok());
  PlacementDecision second = MustPlace(l, Req(16, 8));
  EXPECT_NE(second.racks[0].rack, first.racks[0].rack);
  ASSERT_TRUE(l.Commit(second.ToAllocation("second")).ok());
  PlacementRefusal no = MustRefuse(l, Req(8, 8));
  EXPECT_FALSE(no.unresolvable);
  EXPECT_EQ(no.counts[static_cast<int>(NodeReason::kRackPower)], 4);
  EXPECT_EQ(no.counts[static_cast<int>(NodeReason::kInsufficientGpus)], 4);
  EXPECT_NE(no.Message().find("0/8 nodes are available: 4 Insufficient free GPUs, 4 Rack power cap."),
            std::string::npos)
      << no.Message();
  EXPECT_NE(no.detail.find("would need 7.7 kW for 8 GPUs, 4.6 kW left"), std::string::npos) << no.detail;
  l.Release("first");
  EXPECT_EQ(MustPlace(l, Req(8, 8)).domains, 1);
}

TEST(PlacerTest, OnlyTheLastRackWithPowerForOneShareStillGetsTheJob) {
  // Rack cap 30 kW: 20 GPUs of room per rack. Racks 0 and 1 keep 4 GPUs of room, rack 2 exactly 8 (one share
  // of an 8-per-node job): the search must not be skipped as if no rack could power a share.
  Topology t = Hgx(3, 4, 30);
  Ledger l(t);
  const int used[] = {16, 16, 12};
  for (RackId r = 0; r < 3; ++r) {
    Allocation a{"busy" + std::to_string(r), {}, 0};
    for (int left = used[r], i = 0; left > 0; left -= 8, ++i)
      a.nodes.push_back({t.racks()[r].nodes[i], FullGpuMask(std::min(left, 8))});
    ASSERT_TRUE(l.Commit(a).ok());
  }
  PlacementDecision d = MustPlace(l, Req(8, 8));
  ASSERT_EQ(d.racks.size(), 1u);
  EXPECT_EQ(d.racks[0].rack, 2);
  ASSERT_TRUE(l.Commit(d.ToAllocation("last")).ok());
  EXPECT_EQ(MustRefuse(l, Req(8, 8)).counts[static_cast<int>(NodeReason::kRackPower)], 5);  // free nodes, no power
}

TEST(PlacerTest, DeclaredWattsPerGpuChangeWhatFits) {
  Topology t = Hgx(1, 4, 30);  // 20 kW free
  Ledger l(t);
  PlacementRequest r = Req(32, 8);
  r.watts_per_gpu = 600;  // 19.2 kW
  EXPECT_EQ(Gpus(MustPlace(l, r)), 32);
  r.watts_per_gpu = 700;  // 22.4 kW
  MustRefuse(l, r);
}

TEST(PlacerTest, PowerReserveIsKeptFree) {
  v1::ClusterDescription d = BuildSyntheticCluster({"x", {{ReferenceSystem::kHgxH100, 1, 4, 30, 8, 0, 0}}, 0});
  d.mutable_policy()->set_power_reserve_pct(20);  // 24 kW usable: 14 kW above idle = 14 GPUs
  auto t = Topology::Build(d);
  ASSERT_TRUE(t.ok());
  Ledger l(*t);
  MustPlace(l, Req(14));
  MustRefuse(l, Req(15));
}

TEST(PlacerTest, RowCapBindsAcrossRacks) {
  SyntheticClusterSpec spec;
  // Two racks in one row; the row has 5 kW above idle: five 962.5 W GPUs in total.
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 0, 8, 2, 25});
  Topology t = Build(spec);
  Ledger l(t);
  PlacementDecision d = MustPlace(l, Req(5));
  ASSERT_TRUE(l.Commit(d.ToAllocation("a")).ok());
  PlacementRefusal no = MustRefuse(l, Req(1));
  EXPECT_EQ(no.counts[static_cast<int>(NodeReason::kPowerDomainPower)], 8);
  EXPECT_NE(no.detail.find("power domain b0-row00"), std::string::npos) << no.detail;
}

TEST(PlacerTest, RequiredLocalityWaitsPreferredSpreads) {
  Topology t = Nvl72(2);
  Ledger l(t);
  // 40 GPUs busy in each rack: 32 free in each, 64 in all.
  for (int r = 0; r < 2; ++r) {
    Allocation a{"busy" + std::to_string(r), {}, 0};
    for (int i = 0; i < 10; ++i) a.nodes.push_back({t.racks()[r].nodes[i], 0xf});
    ASSERT_TRUE(l.Commit(a).ok());
  }
  PlacementRefusal no = MustRefuse(l, Req(48, 0, Locality::kRequired));
  EXPECT_EQ(no.counts[static_cast<int>(NodeReason::kNvlinkLocality)], 16);
  EXPECT_NE(no.detail.find("NVLink locality is required"), std::string::npos);
  PlacementDecision d = MustPlace(l, Req(48, 0, Locality::kPreferred));
  EXPECT_EQ(d.domains, 2);
  EXPECT_EQ(d.min_domains, 1);
}

TEST(PlacerTest, LocalityNoneFillsFragmentsFirst) {
  Topology t = Hgx(1);
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0x3f}}, 0}).ok());  // node 0: 2 free
  ASSERT_TRUE(l.Commit({"b", {{1, 0x3f}}, 0}).ok());  // node 1: 2 free
  PlacementDecision d = MustPlace(l, Req(4, 0, Locality::kNone));
  ASSERT_EQ(d.nodes.size(), 2u);
  EXPECT_EQ(d.nodes[0].node, 0);
  EXPECT_EQ(d.nodes[1].node, 1);
  // Preferred keeps the job in one NVLink domain instead.
  EXPECT_EQ(MustPlace(l, Req(4)).domains, 1);
}

TEST(PlacerTest, LocalityNoneTakesAPartlyUsedDomainThatHoldsItWhole) {
  Topology t = Hgx(1);
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0x3f}}, 0}).ok());  // node 0: 2 free
  ASSERT_TRUE(l.Commit({"b", {{1, 0x3f}}, 0}).ok());  // node 1: 2 free
  ASSERT_TRUE(l.Commit({"c", {{2, 0x0f}}, 0}).ok());  // node 2: 4 free; node 3 whole
  PlacementDecision d = MustPlace(l, Req(4, 0, Locality::kNone));
  ASSERT_EQ(d.nodes.size(), 1u);  // not 2 + 2 over nodes 0 and 1
  EXPECT_EQ(d.nodes[0].node, 2);
  EXPECT_EQ(d.domains, 1);
  // A job no partly used domain holds still fills fragments and leaves the whole node free.
  d = MustPlace(l, Req(6, 0, Locality::kNone));
  EXPECT_EQ(d.domains, 3);  // 2 + 2 + 2
  for (const NodeGpus& ng : d.nodes) EXPECT_NE(ng.node, 3);
}

TEST(PlacerTest, QuietRefusalSaysNoWithoutTheReport) {
  Topology t = Hgx(1);
  Ledger l(t);
  PlacementRequest r = Req(64);  // 32 GPUs in the cluster
  r.report_refusal = false;
  PlacementRefusal quiet = MustRefuse(l, r);
  EXPECT_FALSE(quiet.unresolvable);  // not worked out
  EXPECT_TRUE(quiet.detail.empty());
  for (int c : quiet.counts) EXPECT_EQ(c, 0);
  r.report_refusal = true;
  EXPECT_TRUE(MustRefuse(l, r).unresolvable);
  r = Req(8);
  r.report_refusal = false;
  EXPECT_EQ(MustPlace(l, r).domains, 1);  // decisions do not change
}

TEST(PlacerTest, UnhealthyHardwareIsNeverUsed) {
  Topology t = Hgx(1);
  Ledger l(t);
  l.SetNodeHealth(0, NodeHealth::kDown);
  l.SetNodeHealth(1, NodeHealth::kDrained);
  l.SetGpuFailed(2, 0, true);
  PlacementDecision d = MustPlace(l, Req(15));
  std::set<NodeId> nodes;
  for (const NodeGpus& ng : d.nodes) {
    nodes.insert(ng.node);
    if (ng.node == 2) {
      EXPECT_EQ(ng.gpus & 1u, 0u) << "GPU 0 of node 2 has failed";
    }
  }
  EXPECT_EQ(nodes, (std::set<NodeId>{2, 3}));
  d = MustPlace(l, Req(8, 8));
  ASSERT_EQ(d.nodes.size(), 1u);
  EXPECT_EQ(d.nodes[0].node, 3) << "node 2 has 7 good GPUs: it cannot take 8";
}

TEST(PlacerTest, UnhealthyHardwareIsNeverUsedEvenWhenItIsTheOnlyWay) {
  Topology t = Hgx(1);
  Ledger l(t);
  l.SetNodeHealth(0, NodeHealth::kDown);
  l.SetNodeHealth(1, NodeHealth::kDrained);
  l.SetGpuFailed(2, 0, true);
  PlacementRefusal no = MustRefuse(l, Req(24, 8));
  EXPECT_EQ(no.counts[static_cast<int>(NodeReason::kNodeDown)], 1);
  EXPECT_EQ(no.counts[static_cast<int>(NodeReason::kNodeDrained)], 1);
  EXPECT_EQ(no.counts[static_cast<int>(NodeReason::kInsufficientGpus)], 1);
  EXPECT_EQ(no.counts[static_cast<int>(NodeReason::kNotEnoughTogether)], 1);
}

TEST(PlacerTest, DegradedNvl72RackStillPlacesWhatFits) {
  Topology t = Nvl72(1);
  Ledger l(t);
  l.SetNodeHealth(t.racks()[0].nodes[5], NodeHealth::kDown);  // lost a tray: 68 GPUs
  EXPECT_EQ(Gpus(MustPlace(l, Req(68))), 68);
  EXPECT_FALSE(MustRefuse(l, Req(72)).unresolvable);
  EXPECT_TRUE(MustRefuse(l, Req(73)).unresolvable);
}

TEST(PlacerTest, AllowedAndExcludedNodes) {
  Topology t = Hgx(1);
  Ledger l(t);
  PlacementRequest r = Req(8, 8);
  r.allowed_nodes = {2, 3};
  r.excluded_nodes = {2};
  PlacementDecision d = MustPlace(l, r);
  ASSERT_EQ(d.nodes.size(), 1u);
  EXPECT_EQ(d.nodes[0].node, 3);
  r.gpus = 16;
  PlacementRefusal no = MustRefuse(l, r);
  EXPECT_TRUE(no.unresolvable);
  EXPECT_EQ(no.counts[static_cast<int>(NodeReason::kNotAllowed)], 3);
}

TEST(PlacerTest, MixedClusterKeepsAJobOnOneNodeType) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 1, 2, 0, 8, 0, 0});
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 1, 18, 0, 8, 0, 0});
  Topology t = Build(spec);
  Ledger l(t);
  PlacementDecision d = MustPlace(l, Req(24));
  std::set<NodeTypeId> types;
  for (const NodeGpus& ng : d.nodes) types.insert(t.nodes()[ng.node].type);
  EXPECT_EQ(types.size(), 1u);
  EXPECT_EQ(d.domains, 1);  // only the NVL72 rack holds 24 GPUs in one domain
  PlacementRequest typed = Req(8);
  typed.node_type = t.FindNodeType("hgx-h100");
  d = MustPlace(l, typed);
  EXPECT_EQ(t.nodes()[d.nodes[0].node].type, *typed.node_type);
}

TEST(PlacerTest, RequiredCountsItsFewestOverTheEligibleNodesNotTheFreeOnes) {
  // Two HGX nodes (nodes 0-1) and an NVL72 rack (nodes 2-19). A required 16-GPU job offered only the HGX nodes
  // (the rack busy at this instant) waits for the rack when its partition holds the rack: 1 domain, not 2.
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 1, 2, 0, 8, 0, 0});
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 1, 18, 0, 8, 0, 0});
  Topology t = Build(spec);
  Ledger l(t);
  PlacementRequest r = Req(16);
  r.locality = Locality::kRequired;
  r.allowed_nodes = {0, 1};
  // Counted over the offered nodes (no eligible list): 2 HGX domains are the fewest there, and it starts.
  EXPECT_EQ(MustPlace(l, r).domains, 2);
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) r.eligible_nodes.push_back(n);
  const PlacementRefusal waits = MustRefuse(l, r);
  EXPECT_FALSE(waits.unresolvable);
  EXPECT_NE(waits.Message().find("fewest NVLink domains"), std::string::npos) << waits.Message();
  // Preferred takes the best it can get now, whatever the eligible nodes.
  r.locality = Locality::kPreferred;
  EXPECT_EQ(MustPlace(l, r).domains, 2);
  // Eligible nodes the job excludes do not count: without the rack, 2 HGX domains are the fewest again.
  r.locality = Locality::kRequired;
  for (NodeId n = 2; n < static_cast<NodeId>(t.nodes().size()); ++n) r.excluded_nodes.push_back(n);
  EXPECT_EQ(MustPlace(l, r).domains, 2);
  r.eligible_nodes = {99};
  EXPECT_EQ(Placer::Place(l, r).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlacerTest, MalformedRequestsAreErrors) {
  Topology t = Hgx(1);
  Ledger l(t);
  EXPECT_EQ(Placer::Place(l, Req(0)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Placer::Place(l, Req(6, 4)).status().code(), absl::StatusCode::kInvalidArgument);
  PlacementRequest r = Req(4);
  r.allowed_nodes = {99};
  EXPECT_EQ(Placer::Place(l, r).status().code(), absl::StatusCode::kInvalidArgument);
  r = Req(4);
  r.watts_per_gpu = -1;
  EXPECT_EQ(Placer::Place(l, r).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlacerTest, PolicyWattLimitsAreEnforced) {
  v1::ClusterDescription d = BuildSyntheticCluster({"x", {{ReferenceSystem::kHgxH100, 1, 4, 0, 8, 0, 0}}, 0});
  d.mutable_policy()->set_max_watts_per_gpu(900);
  auto t = Topology::Build(d);
  ASSERT_TRUE(t.ok());
  Ledger l(*t);
  PlacementRequest r = Req(4);
  r.watts_per_gpu = 1000;
  EXPECT_EQ(Placer::Place(l, r).status().code(), absl::StatusCode::kInvalidArgument);
  r.watts_per_gpu = 800;
  EXPECT_TRUE(Placer::Place(l, r).ok());
}

TEST(PlacerTest, TooBigIsUnresolvable) {
  Topology t = Hgx(1);
  Ledger l(t);
  PlacementRefusal no = MustRefuse(l, Req(33));
  EXPECT_TRUE(no.unresolvable);
  EXPECT_TRUE(MustRefuse(l, Req(16, 16)).unresolvable);
}

TEST(PlacerTest, FilterAndScoreNodes) {
  Topology t = Hgx(2, 2, 30);
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0x0f}}, 0}).ok());  // node 0: 4 free, in a busy rack
  l.SetNodeHealth(3, NodeHealth::kDrained);
  PlacementRequest r = Req(4, 4);
  EXPECT_EQ(Placer::FilterNode(l, r, 0), std::nullopt);
  EXPECT_EQ(Placer::FilterNode(l, r, 3), NodeReason::kNodeDrained);
  EXPECT_EQ(Placer::ScoreNode(l, r, 3), 0);
  // The half-used node fits a 4-GPU pod tightly: it must outscore an empty node in an empty rack.
  EXPECT_GT(Placer::ScoreNode(l, r, 0), Placer::ScoreNode(l, r, 2));
  for (NodeId n = 0; n < 4; ++n) {
    EXPECT_GE(Placer::ScoreNode(l, r, n), 0);
    EXPECT_LE(Placer::ScoreNode(l, r, n), 10);
  }
  // The batch forms agree with the per-node ones, and unknown ids are rejected.
  const std::vector<NodeId> ids = {0, 1, 2, 3, kNoId, 99};
  std::vector<std::optional<NodeReason>> reasons;
  std::vector<int> scores;
  ASSERT_TRUE(Placer::FilterNodes(l, r, ids, &reasons).ok());
  Placer::ScoreNodes(l, r, ids, &scores);
  ASSERT_EQ(reasons.size(), ids.size());
  ASSERT_EQ(scores.size(), ids.size());
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(reasons[i], Placer::FilterNode(l, r, ids[i]));
  // Place puts the pod on node 0 (the tight fit): it scores 10, the others at most 8 (other domains), 0 drained.
  EXPECT_EQ(scores[0], 10);
  EXPECT_EQ(scores[1], std::min(8, Placer::ScoreNode(l, r, 1)));
  EXPECT_EQ(scores[2], std::min(8, Placer::ScoreNode(l, r, 2)));
  EXPECT_EQ(scores[3], 0);
  EXPECT_EQ(reasons[4], NodeReason::kNotAllowed);
  EXPECT_EQ(reasons[5], NodeReason::kNotAllowed);
  EXPECT_EQ(scores[5], 0);
}

// FilterNodes and ScoreNodes work out each rack's power room and terms once per call; they must still agree
// with FilterNode and ScoreNode node by node (below Place's pick, ScoreNode capped at 9 in the picked NVLink
// domains and 8 elsewhere), in any order, with repeats, as the ledger fills up and caps bind.
TEST(PlacerTest, BatchScoresMatchSingleScoresOnRandomStates) {
  Topology t = Hgx(6, 4, 30);
  Ledger l(t);
  std::mt19937 rng(11);
  int power_refusals = 0;
  for (int step = 0; step < 60; ++step) {
    const NodeId node = static_cast<NodeId>(rng() % t.nodes().size());
    const GpuMask want = static_cast<GpuMask>(rng() & 0xff) & ~l.allocated_gpus(node);
    if (want != 0) (void)l.Commit({"s" + std::to_string(step), {{node, want}}, 0});  // refused over a cap
    std::vector<NodeId> ids;
    for (int k = 0; k < 40; ++k) ids.push_back(static_cast<NodeId>(rng() % t.nodes().size()));
    ids.push_back(kNoId);
    PlacementRequest r = Req(1 << (rng() % 4), 0);
    r.gpus_per_node = r.gpus;
    if (rng() % 3 == 0) r.watts_per_gpu = 400 + static_cast<int>(rng() % 800);  // makes rack caps bind sooner
    std::vector<int> scores;
    std::vector<std::optional<NodeReason>> verdicts;
    Placer::ScoreNodes(l, r, ids, &scores);
    ASSERT_TRUE(Placer::FilterNodes(l, r, ids, &verdicts).ok());
    PlacementRequest among = r;
    for (NodeId id : ids)
      if (id != kNoId) among.allowed_nodes.push_back(id);
    absl::StatusOr<PlacementOutcome> outcome = Placer::Place(l, among);
    ASSERT_TRUE(outcome.ok());
    std::set<NodeId> picked;
    std::set<DomainId> picked_domains;
    if (const auto* d = std::get_if<PlacementDecision>(&*outcome)) {
      for (const NodeGpus& ng : d->nodes) {
        picked.insert(ng.node);
        picked_domains.insert(t.nodes()[ng.node].domain);
      }
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      int expected = Placer::ScoreNode(l, r, ids[i]);
      const bool open = !Placer::FilterNode(l, r, ids[i]).has_value();
      if (open && picked.count(ids[i])) {
        expected = 10;
      } else if (open) {
        expected = std::min(expected, picked_domains.count(t.nodes()[ids[i]].domain) ? 9 : 8);
      }
      ASSERT_EQ(scores[i], expected) << step;
      ASSERT_EQ(verdicts[i], Placer::FilterNode(l, r, ids[i])) << step;
      if (verdicts[i] == NodeReason::kRackPower || verdicts[i] == NodeReason::kPowerDomainPower) ++power_refusals;
    }
  }
  EXPECT_GT(power_refusals, 0);  // the caps did bind, so the shared power room was exercised
}

}  // namespace
}  // namespace rackwise

namespace rackwise {
namespace {

TEST(PlacerMinDomainsTest, CapsThatShrinkDomainsRaiseTheMinimum) {
  // 110 kW NVL72 racks: 27 kW idle leaves 83 kW = 65 GPUs at 1,275 W. 130 GPUs need 2 racks by size,
  // 2 by power; 140 GPUs need 2 by size but 3 by power, and `required` must accept 3.
  Topology t = Nvl72(4, 110);
  Ledger l(t);
  PlacementDecision d = MustPlace(l, Req(140, 0, Locality::kRequired));
  EXPECT_EQ(d.domains, 3);
  EXPECT_EQ(d.min_domains, 3);
  EXPECT_EQ(MustPlace(l, Req(130, 0, Locality::kRequired)).min_domains, 2);
}

TEST(PlacerMinDomainsTest, PreferredWaitsForTheFewestDomainsWhileThePolicySays) {
  v1::ClusterDescription desc = BuildSyntheticCluster({"x", {{ReferenceSystem::kGb200Nvl72, 2, 18, 0, 8, 0, 0}}, 0});
  desc.mutable_policy()->set_preferred_wait_s(600);
  auto t = Topology::Build(desc);
  ASSERT_TRUE(t.ok());
  Ledger l(*t);
  for (int r = 0; r < 2; ++r) {  // 32 free GPUs in each rack
    Allocation a{"busy" + std::to_string(r), {}, 0};
    for (int i = 0; i < 10; ++i) a.nodes.push_back({t->racks()[r].nodes[i], 0xf});
    ASSERT_TRUE(l.Commit(a).ok());
  }
  PlacementRequest r = Req(48, 0, Locality::kPreferred);
  r.waited_seconds = 599;
  PlacementRefusal no = MustRefuse(l, r);
  EXPECT_EQ(no.counts[static_cast<int>(NodeReason::kNvlinkLocality)], 16);  // 20 trays are full
  r.waited_seconds = 600;
  EXPECT_EQ(MustPlace(l, r).domains, 2);
}

}  // namespace
}  // namespace rackwise

namespace rackwise {
namespace {

TEST(PlacerMinDomainsTest, RowCapsThatKeepRacksFromRunningFullRaiseTheMinimum) {
  // Racks of 110 kW hold 64 GPUs at 4 per tray; a row of 4 racks capped at 300 kW: 300 - 4 x 27 = 192 kW, which
  // powers 150 GPUs (148 in trays of 4): two full racks and a part of a third. 256 GPUs need 4 racks by size
  // and power per rack, and 4 still with rows counted: two full racks in each row (128 <= 148 per row). Taking
  // the most powered racks first would fill one row to 148 (three racks) and need 5. 272 GPUs do need 5: a row
  // gives at most 128 in 2 racks and 148 in 3, so 4 racks give at most 256 and 5 give 276.
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 8, 18, 110, 8, 4, 300});
  Topology t = Build(spec);
  Ledger l(t);
  PlacementDecision d = MustPlace(l, Req(256, 4, Locality::kRequired));
  EXPECT_EQ(d.min_domains, 4);
  EXPECT_EQ(d.domains, 4);
  PlacementDecision more = MustPlace(l, Req(272, 4, Locality::kRequired));
  EXPECT_EQ(more.min_domains, 5);
  EXPECT_EQ(more.domains, 5);
}

}  // namespace
}  // namespace rackwise
