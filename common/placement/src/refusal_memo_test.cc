// RefusalMemo against the placer itself: through random streams of every kind of ledger change (placements,
// releases, health, failed GPUs, caps, power readings) and of pending jobs asking again, with and without waiting
// longer, what the memo answers must be exactly what Placer::Place answers at that moment.
#include "rackwise/refusal_memo.h"

#include <gtest/gtest.h>

#include <random>

#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

v1::ClusterDescription CappedCluster(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  SyntheticClusterSpec spec;
  RackBlock block;
  block.system = static_cast<ReferenceSystem>(pick(0, 2));
  block.racks = pick(2, 6);
  block.nodes_per_rack = block.system == ReferenceSystem::kGb200Nvl72 ? pick(4, 18) : pick(1, 4);
  const v1::NodeType type = ReferenceNodeType(block.system);
  const double idle_kw = block.nodes_per_rack * type.idle_watts() / 1000.0;
  const double full_kw = block.nodes_per_rack * type.node_watts() / 1000.0;
  block.rack_cap_kw = idle_kw + (full_kw - idle_kw) * (0.3 + 0.6 * pick(0, 10) / 10.0);
  block.racks_per_row = pick(1, 3);
  block.row_cap_kw = block.racks_per_row * (idle_kw + (block.rack_cap_kw - idle_kw) * 0.8);
  block.racks_per_su = pick(1, 2);
  spec.blocks.push_back(block);
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_preferred_wait_s(600);  // so that waiting longer can change a preferred job's answer
  return d;
}

PlacementRequest PendingJob(std::mt19937_64& rng, const Topology& t, int serial) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  PlacementRequest r;
  r.id = "pending" + std::to_string(serial);
  r.gpus = std::vector<int>{1, 4, 8, 16, 36, 72, 144}[pick(0, 6)];
  r.locality = std::vector<std::optional<Locality>>{std::nullopt, Locality::kRequired, Locality::kPreferred,
                                                    Locality::kNone}[pick(0, 3)];
  if (pick(0, 2) == 0) r.watts_per_gpu = pick(500, 1400);
  if (pick(0, 3) == 0)
    for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
      if (pick(0, 2)) r.allowed_nodes.push_back(n);
  return r;
}

// One random change of any kind the ledger has.
void ChangeSomething(std::mt19937_64& rng, const Topology& t, Ledger* l, int* serial) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const NodeId node = pick(0, static_cast<int>(t.nodes().size()) - 1);
  switch (pick(0, 7)) {
    case 0:
    case 1: {  // a small job starts
      PlacementRequest r;
      r.id = "run" + std::to_string((*serial)++);
      r.gpus = pick(1, 8);
      r.locality = Locality::kNone;
      absl::StatusOr<PlacementOutcome> out = Placer::Place(*l, r);
      const auto* d = out.ok() ? std::get_if<PlacementDecision>(&*out) : nullptr;
      if (d != nullptr) {
        ASSERT_TRUE(l->Commit(d->ToAllocation(r.id)).ok());
      }
      break;
    }
    case 2: {  // one ends
      std::vector<const Allocation*> running = l->Allocations();
      if (!running.empty()) l->Release(running[pick(0, static_cast<int>(running.size()) - 1)]->id);
      break;
    }
    case 3: l->SetNodeHealth(node, static_cast<NodeHealth>(pick(0, 2))); break;
    case 4: l->SetGpuFailed(node, pick(0, t.nodes()[node].gpus - 1), pick(0, 1) == 1); break;
    case 5: {
      const RackId rack = pick(0, static_cast<int>(t.racks().size()) - 1);
      l->SetRackCap(rack, t.racks()[rack].cap * pick(70, 130) / 100);
      break;
    }
    case 6:
      if (!t.power_domains().empty()) {
        const PowerDomainId p = pick(0, static_cast<int>(t.power_domains().size()) - 1);
        l->SetPowerDomainCap(p, t.power_domains()[p].cap * pick(70, 130) / 100);
      }
      break;
    default: {
      std::vector<std::optional<Milliwatts>> readings(t.racks().size());
      for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r)
        if (pick(0, 1)) readings[r] = l->rack_draw(r) * pick(50, 110) / 100;
      l->SetMeasuredDraw(readings, 0.3);
    }
  }
}

void ExpectSameOutcome(const PlacementOutcome& memo, const PlacementOutcome& fresh, const std::string& what) {
  ASSERT_EQ(memo.index(), fresh.index()) << what;
  if (const auto* a = std::get_if<PlacementRefusal>(&memo)) {
    const auto& b = std::get<PlacementRefusal>(fresh);
    EXPECT_EQ(a->Message(), b.Message()) << what;
    EXPECT_EQ(a->counts, b.counts) << what;
    EXPECT_EQ(a->unresolvable, b.unresolvable) << what;
  } else {
    EXPECT_EQ(std::get<PlacementDecision>(memo).nodes, std::get<PlacementDecision>(fresh).nodes) << what;
  }
}

TEST(RefusalMemoTest, AnswersWhatThePlacerAnswersThroughEveryKindOfChange) {
  uint64_t hits = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    absl::StatusOr<Topology> topo = Topology::Build(CappedCluster(rng));
    ASSERT_TRUE(topo.ok()) << topo.status();
    Ledger ledger(*topo);
    RefusalMemo memo;
    std::vector<PlacementRequest> pending;
    for (int i = 0; i < 6; ++i) pending.push_back(PendingJob(rng, *topo, i));
    int serial = 0;
    for (int step = 0; step < 120; ++step) {
      // Most steps change something; some change nothing, as a scheduling pass where nothing ended.
      if (pick(0, 2) > 0) ChangeSomething(rng, *topo, &ledger, &serial);
      for (PlacementRequest& r : pending) {
        if (pick(0, 3) == 0) r.waited_seconds += pick(0, 400);
        // Slurm offers other nodes on another pass; an administrator may change a pending job's watts.
        if (pick(0, 5) == 0) {
          r.allowed_nodes.clear();
          for (NodeId n = 0; n < static_cast<NodeId>(topo->nodes().size()); ++n)
            if (pick(0, 3) > 0) r.allowed_nodes.push_back(n);
        }
        if (pick(0, 7) == 0) r.watts_per_gpu = pick(0, 1) == 0 ? 0 : pick(500, 1400);
        const std::string what = "seed " + std::to_string(seed) + " step " + std::to_string(step) + " " + r.id;
        absl::StatusOr<PlacementOutcome> remembered = memo.Place(ledger, r);
        absl::StatusOr<PlacementOutcome> fresh = Placer::Place(ledger, r);
        ASSERT_EQ(remembered.ok(), fresh.ok()) << what;
        if (fresh.ok()) ExpectSameOutcome(*remembered, *fresh, what);
      }
    }
    hits += memo.hits();
  }
  EXPECT_GT(hits, 1000u);  // the memo must answer from memory often, or this checks nothing
}

TEST(RefusalMemoTest, GenerationsAreUniqueAcrossLedgersAndKeptByCopies) {
  std::mt19937_64 rng(7);
  absl::StatusOr<Topology> topo = Topology::Build(CappedCluster(rng));
  ASSERT_TRUE(topo.ok());
  Ledger a(*topo);
  const Ledger b(*topo);
  EXPECT_NE(a.generation(), b.generation());  // a rebuilt ledger never passes for an older one
  Ledger copy = a;
  EXPECT_EQ(copy.generation(), a.generation());
  copy.SetNodeHealth(0, NodeHealth::kDrained);
  EXPECT_NE(copy.generation(), a.generation());
  const uint64_t before = a.generation();
  EXPECT_FALSE(a.Release("nothing"));  // no change, no new generation
  EXPECT_EQ(a.generation(), before);
}

TEST(RefusalMemoTest, ForgetsFitsAndStaysWithinItsCapacity) {
  std::mt19937_64 rng(11);
  absl::StatusOr<Topology> topo = Topology::Build(CappedCluster(rng));
  ASSERT_TRUE(topo.ok());
  Ledger ledger(*topo);
  RefusalMemo memo(/*capacity=*/3);
  PlacementRequest fits;
  fits.id = "fits";
  fits.gpus = 1;
  ASSERT_TRUE(memo.Place(ledger, fits).ok());
  EXPECT_EQ(memo.size(), 0u);
  for (int i = 0; i < 10; ++i) {
    PlacementRequest never;
    never.id = "never" + std::to_string(i);
    never.gpus = topo->total_gpus() + 1;
    ASSERT_TRUE(memo.Place(ledger, never).ok());
    EXPECT_LE(memo.size(), 3u);
  }
}

}  // namespace
}  // namespace rackwise
