// Tests for the fallback order a face offers a resource manager after a decision, and the backfill hold-out.
#include "rackwise/fallback_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "rackwise/ledger.h"
#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

Topology Mixed() {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 0});
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 2, 18, 0});
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

std::vector<NodeId> AllNodes(const Topology& t) {
  std::vector<NodeId> all(t.nodes().size());
  for (NodeId n = 0; n < static_cast<NodeId>(all.size()); ++n) all[n] = n;
  return all;
}

TEST(BackfillHoldsOutTest, OnlyAPreferredJobStartedByBackfill) {
  PlacementPolicy policy;
  policy.default_locality = Locality::kPreferred;
  PlacementRequest r;
  EXPECT_TRUE(BackfillHoldsOut(r, true, policy));  // the policy's default is preferred
  EXPECT_FALSE(BackfillHoldsOut(r, false, policy));
  r.locality = Locality::kRequired;
  EXPECT_FALSE(BackfillHoldsOut(r, true, policy));
  r.locality = Locality::kNone;
  EXPECT_FALSE(BackfillHoldsOut(r, true, policy));
  policy.default_locality = Locality::kNone;
  r.locality.reset();
  EXPECT_FALSE(BackfillHoldsOut(r, true, policy));
}

// HGX: an 8-GPU job on one node, then the node's domain (the same node: left out), its rack, everything.
TEST(FallbackNodeSetsTest, DecisionThenDomainsThenRacksThenAllowed) {
  Topology t = Mixed();
  Ledger l(t);
  PlacementRequest r;
  r.gpus = 8;
  r.gpus_per_node = 8;
  r.node_type = *t.FindNodeType("hgx-h100");
  auto out = Placer::Place(l, r);
  ASSERT_TRUE(out.ok());
  const auto& d = std::get<PlacementDecision>(*out);
  const std::vector<std::vector<NodeId>> sets = FallbackNodeSets(t, d, Locality::kPreferred, AllNodes(t));
  ASSERT_EQ(sets.size(), 3u);
  EXPECT_EQ(sets[0], std::vector<NodeId>{d.nodes[0].node});
  EXPECT_EQ(sets[1], t.racks()[t.nodes()[d.nodes[0].node].rack].nodes);
  EXPECT_EQ(sets[2], AllNodes(t));
  // `required`: never past the decision's NVLink domains.
  EXPECT_EQ(FallbackNodeSets(t, d, Locality::kRequired, AllNodes(t)).size(), 1u);
}

// Random decisions: the decision's nodes come first, each of the first sets holds the one before, `required`
// stops at the domains, and the last set of a non-required job is what was allowed.
TEST(FallbackNodeSetsTest, NestedAndBoundedOnRandomDecisions) {
  Topology t = Mixed();
  std::mt19937 rng(3);
  for (int round = 0; round < 200; ++round) {
    Ledger l(t);
    for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
      const GpuMask mask = static_cast<GpuMask>(rng() & ((1u << t.nodes()[n].gpus) - 1));
      if (mask && rng() % 2) {
        ASSERT_TRUE(l.Commit({"busy" + std::to_string(n), {{n, mask}}, 0}).ok());
      }
    }
    PlacementRequest r;
    r.gpus = 1 + static_cast<int>(rng() % 80);
    r.locality = Locality::kPreferred;
    auto out = Placer::Place(l, r);
    ASSERT_TRUE(out.ok());
    const auto* d = std::get_if<PlacementDecision>(&*out);
    if (!d) continue;
    for (Locality loc : {Locality::kRequired, Locality::kPreferred, Locality::kNone}) {
      const auto sets = FallbackNodeSets(t, *d, loc, AllNodes(t));
      ASSERT_FALSE(sets.empty());
      std::vector<NodeId> chosen;
      for (const NodeGpus& ng : d->nodes) chosen.push_back(ng.node);
      EXPECT_EQ(sets[0], chosen);
      for (size_t k = 1; k < sets.size(); ++k) {
        EXPECT_NE(sets[k], sets[k - 1]);
        if (k <= 2) {
          EXPECT_TRUE(std::includes(sets[k].begin(), sets[k].end(), sets[k - 1].begin(), sets[k - 1].end()));
        }
      }
      if (loc == Locality::kRequired) {
        EXPECT_LE(sets.size(), 2u);
        for (NodeId n : sets.back())
          EXPECT_TRUE(std::any_of(d->nodes.begin(), d->nodes.end(), [&](const NodeGpus& ng) {
            return t.nodes()[ng.node].domain == t.nodes()[n].domain;
          }));
      } else {
        EXPECT_EQ(sets.back(), AllNodes(t));
      }
    }
  }
}

}  // namespace
}  // namespace rackwise
