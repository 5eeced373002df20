// PickNodes against a direct reading of its rule, on random domains: an any-split job takes, repeatedly, the
// tightest single node that holds the rest (fewest free GPUs, then member order), else the node that gives the
// most (the first in member order). The picker sorts once instead of looking again at every node each time; the
// reference below is the plain O(n^2) loop.
#include "node_picker.h"

#include <gtest/gtest.h>

#include <bit>
#include <random>

#include "placement_context.h"
#include "rackwise/synthetic_cluster.h"
#include "request_setup.h"

namespace rackwise::internal {
namespace {

std::vector<NodeGpus> PickByTheRule(const PlacementContext& ctx, DomainId domain, int gpus) {
  std::vector<NodeId> members;
  for (NodeId n : ctx.topology().domains()[domain].nodes)
    if (ctx.NodeCapacity(n) > 0) members.push_back(n);
  std::vector<bool> used(members.size(), false);
  std::vector<NodeGpus> out;
  int remaining = gpus;
  while (remaining > 0) {
    int fit = -1, largest = -1;
    for (size_t i = 0; i < members.size(); ++i) {
      if (used[i]) continue;
      const int usable = ctx.NodeCapacity(members[i]);
      const int free = std::popcount(ctx.ledger().free_gpus(members[i]));
      if (usable >= remaining && (fit < 0 || free < std::popcount(ctx.ledger().free_gpus(members[fit]))))
        fit = static_cast<int>(i);
      if (largest < 0 || usable > ctx.NodeCapacity(members[largest])) largest = static_cast<int>(i);
    }
    const int pick = fit >= 0 ? fit : largest;
    if (pick < 0) return out;
    used[pick] = true;
    const int take = std::min(remaining, ctx.NodeCapacity(members[pick]));
    out.push_back({members[pick], LowestGpus(ctx.ledger().free_gpus(members[pick]), take)});
    remaining -= take;
  }
  return out;
}

TEST(NodePickerTest, AnySplitTakesWhatTheRuleTakes) {
  int compared = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    SyntheticClusterSpec spec;
    const auto system = static_cast<ReferenceSystem>(pick(0, 2));
    spec.blocks.push_back({system, pick(1, 3), 0, 0, 1, 0, 0});
    spec.blocks[0].nodes_per_rack = system == ReferenceSystem::kGb200Nvl72 ? pick(4, 18) : pick(1, 4);
    absl::StatusOr<Topology> topo = Topology::Build(BuildSyntheticCluster(spec));
    ASSERT_TRUE(topo.ok()) << topo.status();
    Ledger ledger(*topo);
    // Random partial use: each node loses a random subset of its GPUs.
    for (NodeId n = 0; n < static_cast<NodeId>(topo->nodes().size()); ++n) {
      const GpuMask taken = std::uniform_int_distribution<GpuMask>(0, FullGpuMask(topo->nodes()[n].gpus))(rng);
      if (taken == 0) continue;
      Allocation a;
      a.id = "fill-" + std::to_string(n);
      a.nodes.push_back({n, taken});
      ASSERT_TRUE(ledger.Commit(a, CommitMode::kRecover).ok());
    }
    PlacementRequest request;
    request.share_gpus = pick(0, 1) == 0 ? 0 : 2;
    const int granule = std::max(request.share_gpus, 1);
    for (DomainId d = 0; d < static_cast<DomainId>(topo->domains().size()); ++d) {
      request.gpus = granule;  // only checked for being well formed; the take below is what is asked
      absl::StatusOr<RequestSetup> setup = SetUpRequest(*topo, request);
      ASSERT_TRUE(setup.ok()) << setup.status();
      const NodeTypeId type = topo->nodes()[topo->domains()[d].nodes.front()].type;
      const PlacementContext ctx(ledger, request, setup->locality, type, 0, setup->allowed);
      int offer = 0;
      for (NodeId n : topo->domains()[d].nodes) offer += ctx.NodeCapacity(n);
      for (int take = granule; take <= offer; take += granule) {
        std::vector<NodeGpus> picked;
        ASSERT_TRUE(PickNodes(ctx, d, take, 0, &picked));
        const std::vector<NodeGpus> expected = PickByTheRule(ctx, d, take);
        ASSERT_EQ(picked.size(), expected.size()) << "seed " << seed << " domain " << d << " take " << take;
        for (size_t i = 0; i < picked.size(); ++i) {
          EXPECT_EQ(picked[i].node, expected[i].node) << "seed " << seed << " domain " << d << " take " << take;
          EXPECT_EQ(picked[i].gpus, expected[i].gpus) << "seed " << seed << " domain " << d << " take " << take;
        }
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 1000);  // the random domains must give the rule something to choose
}

}  // namespace
}  // namespace rackwise::internal
