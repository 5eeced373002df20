// PowerGroupIndex::CountPowerShortNodes (asked through the ledger's indexes) against a visit to every node, through
// both of its paths: the pass over the power groups (the first kAsksBeforePowerOrder - 1 asks at a state) and the racks
// ordered by room (the asks after), on random capped clusters (rows, a hall, a reserve) changed by placements,
// releases, health and cap changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "placement_indexes.h"
#include "power_group_index.h"
#include "rackwise/ledger.h"
#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

using internal::IndexesOf;
using internal::PowerGroupIndex;

PowerGroupIndex::PowerShortNodes CountByVisit(const Ledger& l, NodeTypeId type, int least, Milliwatts need) {
  const Topology& t = l.topology();
  const double reserve = t.policy().power_reserve_fraction;
  PowerGroupIndex::PowerShortNodes out;
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    const Node& node = t.nodes()[n];
    if (node.type != type || l.node_health(n) != NodeHealth::kUp || l.free_gpu_count(n) < least) continue;
    Milliwatts chain = std::numeric_limits<Milliwatts>::max();
    for (PowerDomainId p : t.racks()[node.rack].power_chain) chain = std::min(chain, l.PowerDomainRoom(p, reserve));
    if (l.RackRoom(node.rack, reserve) < need) {
      out.rack_short++;
    } else if (chain < need) {
      out.chain_short++;
    } else {
      out.powered++;
    }
  }
  return out;
}

v1::ClusterDescription CappedCluster(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  SyntheticClusterSpec spec;
  for (int b = pick(1, 2); b > 0; --b) {
    RackBlock block;
    block.system = static_cast<ReferenceSystem>(pick(0, 2));
    block.racks = pick(2, 9);
    block.nodes_per_rack = block.system == ReferenceSystem::kGb200Nvl72 ? pick(3, 18) : pick(1, 4);
    const v1::NodeType type = ReferenceNodeType(block.system);
    const double idle_kw = block.nodes_per_rack * type.idle_watts() / 1000.0;
    const double full_kw = block.nodes_per_rack * type.node_watts() / 1000.0;
    block.rack_cap_kw = idle_kw + 0.5 + (full_kw - idle_kw) * pick(30, 100) / 100.0;
    block.racks_per_row = pick(0, 3);
    if (block.racks_per_row > 0) block.row_cap_kw = block.racks_per_row * block.rack_cap_kw * pick(50, 100) / 100.0;
    spec.blocks.push_back(block);
  }
  if (pick(0, 1)) spec.hall_cap_kw = pick(20, 300);
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_power_reserve_pct(pick(0, 2) * 5);
  return d;
}

// Needs at every rack's and power domain's room and one above, where the counts change, and a few others.
std::vector<Milliwatts> Thresholds(const Ledger& l, std::mt19937_64& rng) {
  const Topology& t = l.topology();
  const double reserve = t.policy().power_reserve_fraction;
  std::vector<Milliwatts> needs = {0, 1, std::numeric_limits<Milliwatts>::max()};
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r)
    for (Milliwatts d : {0, 1}) needs.push_back(l.RackRoom(r, reserve) + d);
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p)
    for (Milliwatts d : {0, 1}) needs.push_back(l.PowerDomainRoom(p, reserve) + d);
  std::shuffle(needs.begin(), needs.end(), rng);
  return needs;
}

TEST(LedgerPowerOrderTest, BothPathsCountAsAVisitToEveryNode) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    absl::StatusOr<Topology> topo = Topology::Build(CappedCluster(rng));
    ASSERT_TRUE(topo.ok()) << topo.status();
    Ledger l(*topo);
    std::vector<std::string> held;
    for (int step = 0; step < 30; ++step) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " step " << step);
      // At this state: more asks than the pass is used for, so that both paths answer.
      int asks = 0;
      std::vector<Milliwatts> needs = Thresholds(l, rng);
      while (needs.size() <= PowerGroupIndex::kAsksBeforePowerOrder + 4) needs.push_back(needs[needs.size() % 3]);
      for (const Milliwatts need : needs) {
        for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(topo->node_types().size()); ++type) {
          const int least = pick(0, topo->node_types()[type].gpus + 1);
          const PowerGroupIndex::PowerShortNodes kept = IndexesOf(l).CountPowerShortNodes(type, least, need);
          const PowerGroupIndex::PowerShortNodes visit = CountByVisit(l, type, least, need);
          ASSERT_EQ(kept.rack_short, visit.rack_short) << "ask " << asks << " need " << need << " least " << least;
          ASSERT_EQ(kept.chain_short, visit.chain_short) << "ask " << asks << " need " << need << " least " << least;
          ASSERT_EQ(kept.powered, visit.powered) << "ask " << asks << " need " << need << " least " << least;
          ++asks;
        }
      }
      ASSERT_GT(asks, PowerGroupIndex::kAsksBeforePowerOrder);
      ASSERT_TRUE(l.CheckInvariants().ok()) << l.CheckInvariants();
      // The next state: a placement (most often), a release, a node's health, a rack's cap.
      const int change = pick(0, 9);
      if (change < 6) {
        PlacementRequest r;
        r.id = "j" + std::to_string(step);
        r.gpus = pick(1, 24);
        r.locality = Locality::kNone;
        absl::StatusOr<PlacementOutcome> out = Placer::Place(l, r);
        ASSERT_TRUE(out.ok()) << out.status();
        if (const auto* d = std::get_if<PlacementDecision>(&*out)) {
          ASSERT_TRUE(l.Commit(d->ToAllocation(r.id)).ok());
          held.push_back(r.id);
        }
      } else if (change < 8 && !held.empty()) {
        const size_t i = static_cast<size_t>(pick(0, static_cast<int>(held.size()) - 1));
        l.Release(held[i]);
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (change == 8) {
        l.SetNodeHealth(pick(0, static_cast<int>(topo->nodes().size()) - 1), static_cast<NodeHealth>(pick(0, 2)));
      } else {
        const RackId rack = pick(0, static_cast<int>(topo->racks().size()) - 1);
        l.SetRackCap(rack, topo->racks()[rack].cap * pick(60, 110) / 100);
      }
    }
  }
}

}  // namespace
}  // namespace rackwise
