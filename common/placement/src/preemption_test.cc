// PlanPreemption on hand-built cases: which rack's jobs go for a whole-rack job, victims elsewhere in a row that
// free its power, no victims when the job fits, no plan when nothing makes room, the order of ties, the bounded
// search, and malformed candidates.
#include "rackwise/preemption.h"

#include <gtest/gtest.h>

#include "preemption_expect.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

Topology Build(const RackBlock& block) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back(block);
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

// Trays [first, first + count) of a rack, every GPU of each.
Allocation Trays(const Topology& t, const std::string& id, RackId rack, int first, int count) {
  Allocation a{id, {}, 0};
  for (int i = first; i < first + count; ++i) a.nodes.push_back({t.racks()[rack].nodes[i], 0xf});
  return a;
}

class PreemptionTwoBusyRacks : public ::testing::Test {
 protected:
  // Two NVL72 racks, each held by two 36-GPU jobs. Rack 0's cheapest job is the cheapest of all, but rack 1's
  // two jobs together cost less than rack 0's.
  PreemptionTwoBusyRacks() : t_(Build({ReferenceSystem::kGb200Nvl72, 2, 18, 0, 8, 0, 0})), ledger_(t_) {
    EXPECT_TRUE(ledger_.Commit(Trays(t_, "a1", 0, 0, 9)).ok());
    EXPECT_TRUE(ledger_.Commit(Trays(t_, "a2", 0, 9, 9)).ok());
    EXPECT_TRUE(ledger_.Commit(Trays(t_, "b1", 1, 0, 9)).ok());
    EXPECT_TRUE(ledger_.Commit(Trays(t_, "b2", 1, 9, 9)).ok());
    request_.id = "big";
    request_.gpus = 72;
    request_.locality = Locality::kRequired;
  }
  Topology t_;
  Ledger ledger_;
  PlacementRequest request_;
  std::vector<PreemptionCandidate> candidates_ = {{"a1", 0, 1}, {"a2", 0, 9}, {"b1", 0, 3}, {"b2", 0, 4}};
};

TEST_F(PreemptionTwoBusyRacks, RequiredJobTakesTheRackWithTheCheapestVictims) {
  for (int exhaustive : {14, 0}) {  // every subset, and the bounded search
    auto plan = PlanPreemption(ledger_, request_, candidates_, {exhaustive, 512});
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(plan->has_value());
    EXPECT_EQ((*plan)->victims, (std::vector<std::string>{"b1", "b2"}));
    EXPECT_DOUBLE_EQ((*plan)->lost_gpu_hours, 7);
    EXPECT_EQ((*plan)->decision.domains, 1);
    for (const NodeGpus& ng : (*plan)->decision.nodes) EXPECT_EQ(t_.nodes()[ng.node].rack, 1);
    ExpectPreemptionPlanHolds(ledger_, request_, **plan);
  }
}

TEST_F(PreemptionTwoBusyRacks, NoPlanWhenTheCandidatesCannotMakeRoom) {
  // Only one job of each rack may go: 36 GPUs per rack never make a 72-GPU domain.
  auto plan = PlanPreemption(ledger_, request_, {{"a1", 0, 1}, {"b1", 0, 3}, {"unknown", 0, 0}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->has_value());
  // More than the cluster has.
  request_.gpus = 148;
  plan = PlanPreemption(ledger_, request_, candidates_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->has_value());
}

TEST_F(PreemptionTwoBusyRacks, JobThatFitsHasNoVictims) {
  ASSERT_TRUE(ledger_.Release("b2"));
  request_.gpus = 36;
  auto plan = PlanPreemption(ledger_, request_, candidates_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->has_value());
  EXPECT_TRUE((*plan)->victims.empty());
  EXPECT_EQ((*plan)->lost_gpu_hours, 0);
  ExpectPreemptionPlanHolds(ledger_, request_, **plan);
}

TEST_F(PreemptionTwoBusyRacks, MalformedCandidatesAndLimitsAreRefused) {
  const std::vector<std::vector<PreemptionCandidate>> bad = {{{"a1", 0, 1}, {"a1", 0, 2}},
                                                             {{"", 0, 1}},
                                                             {{"a1", 0, -1}},
                                                             {{"a1", 0, kMaxLostGpuHours * 2}},
                                                             {{"a1", kMaxPreemptionPriority + 1, 1}}};
  for (const auto& candidates : bad)
    EXPECT_EQ(PlanPreemption(ledger_, request_, candidates).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanPreemption(ledger_, request_, candidates_, {21, 512}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanPreemption(ledger_, request_, candidates_, {14, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  request_.gpus = 0;
  EXPECT_EQ(PlanPreemption(ledger_, request_, candidates_).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PreemptionTest, VictimsElsewhereInTheRowFreeItsPower) {
  // A row of two racks of two HGX H100 nodes (2.5 kW idle, 7.7 kW for 8 GPUs each) capped at 25.9 kW: 10 kW idle
  // and two busy nodes fill it. Both busy nodes are in rack 1; the job may only use rack 0, whose GPUs are free.
  const Topology t = Build({ReferenceSystem::kHgxH100, 2, 2, 0, 8, 2, 25.9});
  Ledger ledger(t);
  ASSERT_TRUE(ledger.Commit({"p", {{t.racks()[1].nodes[0], 0xff}}, 0}).ok());
  ASSERT_TRUE(ledger.Commit({"q", {{t.racks()[1].nodes[1], 0xff}}, 0}).ok());
  PlacementRequest request;
  request.id = "job";
  request.gpus = 8;
  request.allowed_nodes = t.racks()[0].nodes;
  const std::vector<PreemptionCandidate> candidates = {{"p", 0, 5}, {"q", 0, 2}};
  for (int exhaustive : {14, 0}) {
    auto plan = PlanPreemption(ledger, request, candidates, {exhaustive, 512});
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(plan->has_value());
    EXPECT_EQ((*plan)->victims, std::vector<std::string>{"q"});
    EXPECT_EQ(t.nodes()[(*plan)->decision.nodes.at(0).node].rack, 0);
    ExpectPreemptionPlanHolds(ledger, request, **plan);
  }
  // With the racks' draw measured, a released job still counts until the next reading (the ledger's rule), so
  // preempting frees no power now; the scratch copy is remade after each such trial.
  ledger.SetMeasuredDraw({ledger.rack_draw(0), ledger.rack_draw(1)}, 0.2);
  auto plan = PlanPreemption(ledger, request, candidates);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->has_value());
}

class PreemptionTies : public ::testing::Test {
 protected:
  // One rack of four HGX nodes, every GPU held: x on node 0, y and z on halves of node 1, w on node 2, v on 3.
  PreemptionTies() : t_(Build({ReferenceSystem::kHgxH100, 1, 4, 0, 8, 0, 0})), ledger_(t_) {
    EXPECT_TRUE(ledger_.Commit({"x", {{0, 0xff}}, 0}).ok());
    EXPECT_TRUE(ledger_.Commit({"y", {{1, 0x0f}}, 0}).ok());
    EXPECT_TRUE(ledger_.Commit({"z", {{1, 0xf0}}, 0}).ok());
    EXPECT_TRUE(ledger_.Commit({"w", {{2, 0xff}}, 0}).ok());
    EXPECT_TRUE(ledger_.Commit({"v", {{3, 0xff}}, 0}).ok());
    request_.id = "job";
    request_.gpus = 8;
    request_.locality = Locality::kRequired;
  }
  std::vector<std::string> Victims(const std::vector<PreemptionCandidate>& candidates) {
    auto plan = PlanPreemption(ledger_, request_, candidates);
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok() || !plan->has_value()) return {"none"};
    ExpectPreemptionPlanHolds(ledger_, request_, **plan);
    return (*plan)->victims;
  }
  Topology t_;
  Ledger ledger_;
  PlacementRequest request_;
};

TEST_F(PreemptionTies, FewerJobsThenLowerPrioritySumThenIds) {
  // Equal hours: one job beats two, whatever their priorities.
  EXPECT_EQ(Victims({{"x", 100, 4}, {"y", 0, 2}, {"z", 0, 2}}), std::vector<std::string>{"x"});
  // Fewer hours beats fewer jobs.
  EXPECT_EQ(Victims({{"x", 0, 4}, {"y", 0, 1.5}, {"z", 0, 2}}), (std::vector<std::string>{"y", "z"}));
  // Equal hours and jobs: the lower priority.
  EXPECT_EQ(Victims({{"x", 5, 4}, {"w", 3, 4}}), std::vector<std::string>{"w"});
  // Everything equal: the ids.
  EXPECT_EQ(Victims({{"x", 3, 4}, {"w", 3, 4}, {"v", 3, 4}}), std::vector<std::string>{"v"});
}

TEST(PreemptionTest, PrioritiesAreSummedNotMaximized) {
  // Four HGX nodes, each pair held by two jobs with half of each node: only {a, b} or {c, d} frees two whole
  // nodes. Equal hours and jobs; {a, b} has the lower sum (10 against 12), {c, d} the lower max (6 against 9).
  const Topology t = Build({ReferenceSystem::kHgxH100, 1, 4, 0, 8, 0, 0});
  Ledger ledger(t);
  ASSERT_TRUE(ledger.Commit({"a", {{0, 0x0f}, {1, 0x0f}}, 0}).ok());
  ASSERT_TRUE(ledger.Commit({"b", {{0, 0xf0}, {1, 0xf0}}, 0}).ok());
  ASSERT_TRUE(ledger.Commit({"c", {{2, 0x0f}, {3, 0x0f}}, 0}).ok());
  ASSERT_TRUE(ledger.Commit({"d", {{2, 0xf0}, {3, 0xf0}}, 0}).ok());
  PlacementRequest request;
  request.id = "job";
  request.gpus = 16;
  request.gpus_per_node = 8;
  auto plan = PlanPreemption(ledger, request, {{"a", 1, 2}, {"b", 9, 2}, {"c", 6, 2}, {"d", 6, 2}});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->has_value());
  EXPECT_EQ((*plan)->victims, (std::vector<std::string>{"a", "b"}));
  ExpectPreemptionPlanHolds(ledger, request, **plan);
}

TEST(PreemptionTest, BoundedSearchFindsTheCheapestRackAmongManyCandidates) {
  // Three NVL72 racks, one 4-GPU job per tray (54 candidates, past the exhaustive limit). Rack 2's trays cost the
  // least in total, although rack 0 holds the cheapest single trays.
  const Topology t = Build({ReferenceSystem::kGb200Nvl72, 3, 18, 0, 8, 0, 0});
  Ledger ledger(t);
  std::vector<PreemptionCandidate> candidates;
  for (RackId r = 0; r < 3; ++r) {
    for (int i = 0; i < 18; ++i) {
      const std::string id = "r" + std::to_string(r) + "t" + std::to_string(100 + i);
      ASSERT_TRUE(ledger.Commit(Trays(t, id, r, i, 1)).ok());
      const double hours = r == 0 ? (i < 9 ? 0.5 : 6) : r == 1 ? 3 : 2.5;
      candidates.push_back({id, 0, hours});
    }
  }
  PlacementRequest request;
  request.id = "big";
  request.gpus = 72;
  request.locality = Locality::kRequired;
  auto plan = PlanPreemption(ledger, request, candidates);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->has_value());
  EXPECT_EQ((*plan)->victims.size(), 18u);
  for (const std::string& id : (*plan)->victims) EXPECT_EQ(id.substr(0, 2), "r2");
  EXPECT_DOUBLE_EQ((*plan)->lost_gpu_hours, 45);
  ExpectPreemptionPlanHolds(ledger, request, **plan);
}

}  // namespace
}  // namespace rackwise
