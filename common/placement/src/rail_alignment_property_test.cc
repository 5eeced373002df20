// Property test for objective 4 of placer.h: a partial-node job on several nodes gets the same GPU indices (the
// same rails) on every node whenever the racks it lands in could give that. The checker is exhaustive and
// independent of the placer: it tries every set of K indices against every node of a rack.
#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <set>
#include <string>

#include "rackwise/gpu_mask.h"
#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

bool Usable(const Ledger& l, const PlacementRequest& r, NodeId n) {
  for (NodeId x : r.excluded_nodes)
    if (x == n) return false;
  return l.node_health(n) == NodeHealth::kUp;
}

// Brute force: some K indices free on at least `nodes` usable nodes of `rack`.
bool RackCanAlign(const Ledger& l, const PlacementRequest& r, RackId rack, int nodes) {
  const Topology& t = l.topology();
  const int k = r.gpus_per_node;
  const int width = t.type_of(t.racks()[rack].nodes.front()).gpus;
  for (GpuMask set = 0; set < (GpuMask{1} << width); ++set) {
    if (std::popcount(set) != k) continue;
    int holders = 0;
    for (NodeId n : t.racks()[rack].nodes)
      if (Usable(l, r, n) && (set & ~l.free_gpus(n)) == 0) ++holders;
    if (holders >= nodes) return true;
  }
  return false;
}

// Random HGX racks in one scalable unit, no caps (so that power cannot be the reason for another choice),
// random GPUs busy, failed or nodes down.
Ledger RandomLedger(std::mt19937_64& rng, const Topology& t) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Ledger l(t);
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    const GpuMask busy = static_cast<GpuMask>(pick(0, 255)) & static_cast<GpuMask>(pick(0, 255));
    if (busy != 0) {
      EXPECT_TRUE(l.Commit({"busy" + std::to_string(n), {{n, busy}}, 0}).ok());
    }
    if (pick(0, 11) == 0) l.SetGpuFailed(n, pick(0, 7), true);
    if (pick(0, 15) == 0) l.SetNodeHealth(n, NodeHealth::kDown);
  }
  return l;
}

// 1..max_racks uncapped HGX racks of 2..max_nodes nodes in one scalable unit.
absl::StatusOr<Topology> RandomHgxRacks(std::mt19937_64& rng, int max_racks, int max_nodes) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, pick(1, max_racks), pick(2, max_nodes), 0, 8, 0, 0});
  return Topology::Build(BuildSyntheticCluster(spec));
}

std::optional<Locality> RandomLocality(std::mt19937_64& rng) {
  return std::vector<std::optional<Locality>>{std::nullopt, Locality::kRequired, Locality::kPreferred,
                                              Locality::kNone}[std::uniform_int_distribution<int>(0, 3)(rng)];
}

TEST(RailAlignmentPropertyTest, PartialNodeJobIsAlignedWheneverItsRackCouldAlignIt) {
  std::mt19937_64 rng(20261201);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int one_rack_decisions = 0, could_align = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    absl::StatusOr<Topology> topo = RandomHgxRacks(rng, 3, 10);
    ASSERT_TRUE(topo.ok()) << topo.status();
    const Ledger l = RandomLedger(rng, *topo);
    PlacementRequest r;
    r.id = "job";
    r.gpus_per_node = pick(1, 7);
    const int nodes = pick(2, 5);
    r.gpus = r.gpus_per_node * nodes;
    r.locality = RandomLocality(rng);
    if (pick(0, 3) == 0) r.excluded_nodes.push_back(pick(0, static_cast<int>(topo->nodes().size()) - 1));
    SCOPED_TRACE(testing::Message() << "trial " << trial << ": " << nodes << "x" << r.gpus_per_node);
    absl::StatusOr<PlacementOutcome> out = Placer::Place(l, r);
    ASSERT_TRUE(out.ok()) << out.status();
    const auto* d = std::get_if<PlacementDecision>(&*out);
    if (d == nullptr) continue;
    std::set<GpuMask> masks;
    std::set<RackId> racks;
    for (const NodeGpus& ng : d->nodes) {
      masks.insert(ng.gpus);
      racks.insert(topo->nodes()[ng.node].rack);
    }
    ASSERT_EQ(d->rail_aligned, masks.size() == 1) << "the decision's rail_aligned flag is wrong";
    // Fewer racks come first (objective 3); `none` asks for the smallest fragments anywhere, not for locality.
    if (racks.size() != 1 || r.locality == Locality::kNone) continue;
    ++one_rack_decisions;
    bool some_rack_aligns = false;
    for (RackId rack = 0; rack < static_cast<RackId>(topo->racks().size()); ++rack)
      some_rack_aligns = some_rack_aligns || RackCanAlign(l, r, rack, nodes);
    if (!some_rack_aligns) continue;
    ++could_align;
    EXPECT_TRUE(d->rail_aligned) << "rack " << topo->racks()[*racks.begin()].name
                                 << " was chosen unaligned, though some rack could align the job";
  }
  // Not vacuous: many decisions, and many where alignment was possible but not trivially so.
  EXPECT_GT(one_rack_decisions, 1000);
  EXPECT_GT(could_align, 500);
}

// Any split (no gpus_per_node): every smaller share uses the largest share's GPU indices as far as its node's
// free GPUs allow. Checked against the free GPUs before the decision, share by share.
TEST(RailAlignmentPropertyTest, AnySplitSharesUseTheLargestSharesRails) {
  std::mt19937_64 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int multi_node = 0, moved = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    absl::StatusOr<Topology> topo = RandomHgxRacks(rng, 2, 6);
    ASSERT_TRUE(topo.ok()) << topo.status();
    const Ledger l = RandomLedger(rng, *topo);
    PlacementRequest r;
    r.id = "job";
    r.gpus = pick(3, 20);
    r.locality = RandomLocality(rng);
    SCOPED_TRACE(testing::Message() << "trial " << trial << ": " << r.gpus << " GPUs");
    absl::StatusOr<PlacementOutcome> out = Placer::Place(l, r);
    ASSERT_TRUE(out.ok()) << out.status();
    const auto* d = std::get_if<PlacementDecision>(&*out);
    if (d == nullptr || d->nodes.size() < 2) continue;
    ++multi_node;
    GpuMask rails = 0;
    int widest = 0;
    for (const NodeGpus& ng : d->nodes) {
      if (std::popcount(ng.gpus) > widest) {
        widest = std::popcount(ng.gpus);
        rails = ng.gpus;
      }
    }
    for (const NodeGpus& ng : d->nodes) {
      const GpuMask free = l.free_gpus(ng.node);
      const int count = std::popcount(ng.gpus);
      ASSERT_EQ(ng.gpus & ~free, 0u);
      EXPECT_EQ(std::popcount(ng.gpus & rails), std::min(count, std::popcount(free & rails)))
          << topo->nodes()[ng.node].name << " could use more of the largest share's rails";
      if (std::popcount(LowestGpus(free, count) & ~rails) > 0 && (ng.gpus & ~rails) == 0) ++moved;
    }
  }
  EXPECT_GT(multi_node, 500);
  EXPECT_GT(moved, 50);  // shares the lowest free GPUs would have put off the rails
}

}  // namespace
}  // namespace rackwise
