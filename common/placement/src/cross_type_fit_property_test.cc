// Property test: a job that one NVLink domain can hold goes to the tightest such domain over every node type it
// may use (fewest GPUs left free in it, then the smaller domain), checked against a brute force over every
// domain of random mixed clusters (NVL72 racks beside HGX nodes) with random load and caps that bind.
#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <variant>

#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

// Whether domain `d` can hold all of `r` now: its nodes' free GPUs in the job's shares, and the watts its rack
// and every power domain above the rack can still give (less the reserve). Visits nodes, not the ledger's index.
bool HoldsWhole(const Ledger& l, const PlacementRequest& r, const NvlinkDomain& d) {
  const Topology& t = l.topology();
  if (r.gpus_per_node > t.node_types()[d.type].gpus) return false;
  int shares = 0;
  for (NodeId n : d.nodes) {
    const int free = std::popcount(l.free_gpus(n));
    shares += r.gpus_per_node > 0 ? (free >= r.gpus_per_node ? r.gpus_per_node : 0) : free;
  }
  const double keep = 1.0 - t.policy().power_reserve_fraction;
  auto room = [keep](Milliwatts cap, Milliwatts draw) { return static_cast<Milliwatts>(cap * keep) - draw; };
  Milliwatts watts = room(l.rack_cap(d.rack), l.rack_draw(d.rack));
  for (PowerDomainId p : t.racks()[d.rack].power_chain)
    watts = std::min(watts, room(l.power_domain_cap(p), l.power_domain_draw(p)));
  const Milliwatts per_gpu = t.node_types()[d.type].per_gpu;
  return shares >= r.gpus && std::max<Milliwatts>(watts, 0) / per_gpu >= r.gpus;
}

v1::ClusterDescription MixedCluster(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  SyntheticClusterSpec spec;
  for (ReferenceSystem system : {ReferenceSystem::kGb200Nvl72, static_cast<ReferenceSystem>(pick(0, 1))}) {
    RackBlock block;
    block.system = system;
    block.racks = pick(1, 4);
    block.nodes_per_rack = system == ReferenceSystem::kGb200Nvl72 ? pick(4, 18) : pick(1, 4);
    const v1::NodeType type = ReferenceNodeType(system);
    const double idle_kw = block.nodes_per_rack * type.idle_watts() / 1000.0;
    const double full_kw = block.nodes_per_rack * type.node_watts() / 1000.0;
    if (pick(0, 1)) block.rack_cap_kw = std::uniform_real_distribution<double>(idle_kw + 0.5, full_kw)(rng);
    spec.blocks.push_back(block);
  }
  // What is checked does not depend on the description's order: half the clusters list the HGX block first.
  if (pick(0, 1)) std::swap(spec.blocks[0], spec.blocks[1]);
  return BuildSyntheticCluster(spec);
}

TEST(CrossTypeFitPropertyTest, AOneDomainJobTakesTheTightestDomainOfAnyType) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    absl::StatusOr<Topology> topo = Topology::Build(MixedCluster(rng));
    ASSERT_TRUE(topo.ok()) << topo.status();
    ASSERT_EQ(topo->node_types().size(), 2u);
    Ledger l(*topo);
    for (int step = 0; step < 60; ++step) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " step " << step);
      PlacementRequest r;
      r.id = "job" + std::to_string(step);
      r.gpus_per_node = std::vector<int>{0, 0, 0, 1, 2, 4}[pick(0, 5)];
      r.gpus = r.gpus_per_node > 0 ? r.gpus_per_node * pick(1, 4) : std::vector<int>{1, 2, 3, 4, 6, 8, 16}[pick(0, 6)];
      r.locality = pick(0, 1) ? Locality::kRequired : Locality::kPreferred;
      int tightest_free = 1 << 30, tightest_size = 1 << 30;
      for (const NvlinkDomain& d : topo->domains()) {
        if (!HoldsWhole(l, r, d)) continue;
        const int free = l.domain_free_gpus(static_cast<DomainId>(&d - topo->domains().data()));
        if (free < tightest_free || (free == tightest_free && d.gpus < tightest_size)) {
          tightest_free = free;
          tightest_size = d.gpus;
        }
      }
      absl::StatusOr<PlacementOutcome> out = Placer::Place(l, r);
      ASSERT_TRUE(out.ok()) << out.status();
      const auto* decision = std::get_if<PlacementDecision>(&*out);
      if (tightest_free == 1 << 30) {
        // No one domain holds it: whatever the placer does, it is not one domain.
        if (decision != nullptr) {
          ASSERT_GT(decision->domains, 1);
        }
        continue;
      }
      ASSERT_NE(decision, nullptr) << "refused a job one domain holds";
      ASSERT_EQ(decision->domains, 1);
      const DomainId chosen = topo->nodes()[decision->nodes.front().node].domain;
      ASSERT_EQ(l.domain_free_gpus(chosen), tightest_free) << r.gpus << " GPUs, k " << r.gpus_per_node;
      ASSERT_EQ(topo->domains()[chosen].gpus, tightest_size);
      ++checked;
      ASSERT_TRUE(l.Commit(decision->ToAllocation(r.id)).ok());
      if (pick(0, 3) == 0) l.Release(r.id);  // some end again: holes of every size
    }
  }
  EXPECT_GT(checked, 3000);
}

}  // namespace
}  // namespace rackwise
