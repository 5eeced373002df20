// Tests for the fallback order a face offers a resource manager after a decision, and the backfill rule.
#include "rackwise/fallback_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
  policy.spread_cost_fraction = 0.2;
  PlacementRequest r;
  r.started_by_backfill = true;
  EXPECT_TRUE(BackfillHoldsOut(r, policy));  // the policy's default is preferred, and nothing to weigh
  r.started_by_backfill = false;
  EXPECT_FALSE(BackfillHoldsOut(r, policy));
  r.started_by_backfill = true;
  r.locality = Locality::kRequired;
  EXPECT_FALSE(BackfillHoldsOut(r, policy));
  r.locality = Locality::kNone;
  EXPECT_FALSE(BackfillHoldsOut(r, policy));
  policy.default_locality = Locality::kNone;
  r.locality.reset();
  EXPECT_FALSE(BackfillHoldsOut(r, policy));
}

// The rule stated independently: a backfilled `preferred` job holds out when waiting ends sooner than a spread
// start (wait + T < T * (1 + f)), within the administrator's bound; with nothing to weigh, for as long as the
// bound lets any job wait; never when spreading costs nothing.
TEST(BackfillHoldsOutTest, WeighsTheWaitAgainstTheSpreadCostOnRandomRequests) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> seconds(0, 20000);
  int held = 0, spread = 0;
  for (int round = 0; round < 20000; ++round) {
    PlacementPolicy policy;
    policy.default_locality = Locality::kPreferred;
    policy.spread_cost_fraction = (rng() % 4) * 0.25;
    if (rng() % 3 == 0) policy.preferred_wait_seconds = seconds(rng);
    PlacementRequest r;
    r.started_by_backfill = true;
    r.waited_seconds = seconds(rng);
    if (rng() % 5) r.fewest_domains_in_seconds = seconds(rng);
    if (rng() % 5) r.time_limit_seconds = seconds(rng);
    const double bound_left = policy.preferred_wait_seconds.value_or(INFINITY) - r.waited_seconds;
    bool expected = false;
    if (policy.spread_cost_fraction > 0 && bound_left > 0) {
      if (!r.fewest_domains_in_seconds || !r.time_limit_seconds) {
        expected = true;
      } else {
        const double limit = *r.time_limit_seconds, in = *r.fewest_domains_in_seconds;
        expected = in + limit < limit * (1 + policy.spread_cost_fraction) && in <= bound_left;
      }
    }
    ASSERT_EQ(BackfillHoldsOut(r, policy), expected) << "round " << round;
    (expected ? held : spread)++;
  }
  EXPECT_GT(held, 4000);  // or the property is blind
  EXPECT_GT(spread, 4000);
}

// Every GPU of a rack's nodes taken, as one allocation per node.
void FillRack(const Topology& t, Ledger* l, RackId rack, int keep_free_nodes) {
  const std::vector<NodeId>& nodes = t.racks()[rack].nodes;
  for (size_t i = keep_free_nodes; i < nodes.size(); ++i) {
    const NodeId n = nodes[i];
    ASSERT_TRUE(
        l->Commit({"fill" + std::to_string(n), {{n, static_cast<GpuMask>((1u << t.nodes()[n].gpus) - 1)}}, 0}).ok());
  }
}

// A 16-GPU job, 4 per node, that backfill may start spread (its fewest domain, one NVL72 rack, is expected only
// in 10,000 s, its limit is 3,600 s): it takes HGX nodes, where it can never be whole, and never pieces of the
// NVL72 racks, whose whole domains the jobs ahead of it wait for. Expected soon, it holds out altogether; in its
// turn (not by backfill) it may spread over NVL72 racks too.
TEST(BackfillHoldsOutTest, ABackfilledJobSpreadsOnlyOverTypesThatCannotGiveItsFewestDomains) {
  Topology t = Mixed();
  const NodeTypeId hgx = *t.FindNodeType("hgx-h100");
  PlacementRequest r;
  r.id = "backfilled";
  r.gpus = 16;
  r.gpus_per_node = 4;
  r.locality = Locality::kPreferred;
  r.started_by_backfill = true;
  r.fewest_domains_in_seconds = 10000;
  r.time_limit_seconds = 3600;
  std::vector<RackId> nvl, hgx_racks;
  for (RackId rack = 0; rack < static_cast<RackId>(t.racks().size()); ++rack)
    (t.type_of(t.racks()[rack].nodes[0]).name == "hgx-h100" ? hgx_racks : nvl).push_back(rack);
  ASSERT_EQ(nvl.size(), 2u);
  ASSERT_EQ(hgx_racks.size(), 2u);

  Ledger l(t);
  for (RackId rack : nvl) FillRack(t, &l, rack, /*keep_free_nodes=*/3);  // 12 free GPUs on each NVL72 rack
  auto out = Placer::Place(l, r);
  ASSERT_TRUE(out.ok()) << out.status();
  const auto* d = std::get_if<PlacementDecision>(&*out);
  ASSERT_NE(d, nullptr);
  for (const NodeGpus& ng : d->nodes) EXPECT_EQ(t.nodes()[ng.node].type, hgx) << t.nodes()[ng.node].name;

  // No HGX room: 24 free NVL72 GPUs over two racks are not taken.
  Ledger full(t);
  for (RackId rack : nvl) FillRack(t, &full, rack, 3);
  for (RackId rack : hgx_racks) FillRack(t, &full, rack, 0);
  out = Placer::Place(full, r);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(std::holds_alternative<PlacementRefusal>(*out));
  // In its turn, the usual rule lets it spread over them.
  PlacementRequest head = r;
  head.started_by_backfill = false;
  out = Placer::Place(full, head);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(std::holds_alternative<PlacementDecision>(*out));
  EXPECT_EQ(std::get<PlacementDecision>(*out).domains, 2);

  // Expected soon (100 s, less than 20% of an hour): held out, HGX nodes free or not.
  r.fewest_domains_in_seconds = 100;
  out = Placer::Place(l, r);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(std::holds_alternative<PlacementRefusal>(*out));

  // Its fewest domain free: taken, whatever the estimate said.
  r.fewest_domains_in_seconds = 10000;
  Ledger one_free(t);
  FillRack(t, &one_free, nvl[0], 3);
  out = Placer::Place(one_free, r);
  ASSERT_TRUE(out.ok()) << out.status();
  d = std::get_if<PlacementDecision>(&*out);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->domains, 1);
  EXPECT_NE(t.nodes()[d->nodes[0].node].type, hgx);
}

// The types a `required` job takes (what the Slurm face leaves in backfill's will-run test): every type that
// gives its fewest domains. 4 GPUs at 4 per node: one HGX node or one NVL72 rack, both; 16 at 4 per node: only
// an NVL72 rack holds them in one domain (HGX needs 4 nodes).
TEST(PlacerFewestDomainsTest, NamesEveryTypeThatGivesTheFewest) {
  Topology t = Mixed();
  const Ledger l(t);
  const NodeTypeId hgx = *t.FindNodeType("hgx-h100"), nvl = *t.FindNodeType("gb200-tray");
  PlacementRequest r;
  r.gpus = 4;
  r.gpus_per_node = 4;
  absl::StatusOr<Placer::Fewest> fewest = Placer::FewestDomains(l, r);
  ASSERT_TRUE(fewest.ok()) << fewest.status();
  EXPECT_EQ(fewest->domains, 1);
  std::vector<NodeTypeId> both = {hgx, nvl};
  std::sort(both.begin(), both.end());
  EXPECT_EQ(fewest->types, both);
  r.gpus = 16;
  fewest = Placer::FewestDomains(l, r);
  ASSERT_TRUE(fewest.ok()) << fewest.status();
  EXPECT_EQ(fewest->domains, 1);
  EXPECT_EQ(fewest->types, std::vector<NodeTypeId>{nvl});
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
