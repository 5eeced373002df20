// Property test for measured power: random clusters, random readings (fresh, missing, far above or below the
// estimate), random reclaim_pct and random streams of placements and releases. An independent model of the
// rule (kept by the test from its own bookkeeping, not the ledger's counters) checks after every placement:
//  - for every rack and power domain a placement adds to, max(estimate, measured) -- less the reclaimed share of
//    the gap -- stays within the cap less the reserve;
//  - the measured draw plus what was placed since the reading stays within the cap less the reserve (reclaim
//    never passes the cap);
//  - the ledger's counted draw equals the model's.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"
#include "rackwise/telemetry.h"

namespace rackwise {
namespace {

v1::ClusterDescription RandomCluster(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  SyntheticClusterSpec spec;
  RackBlock block;
  block.system = static_cast<ReferenceSystem>(pick(0, 2));
  block.racks = pick(1, 5);
  block.nodes_per_rack = block.system == ReferenceSystem::kGb200Nvl72 ? pick(4, 18) : pick(1, 4);
  const v1::NodeType type = ReferenceNodeType(block.system);
  const double idle_kw = block.nodes_per_rack * type.idle_watts() / 1000.0;
  const double full_kw = block.nodes_per_rack * type.node_watts() / 1000.0;
  block.rack_cap_kw = idle_kw + 0.5 + (full_kw - idle_kw) * pick(20, 100) / 100.0;
  if (pick(0, 1)) {
    block.racks_per_row = pick(1, 3);
    block.row_cap_kw = block.racks_per_row * (idle_kw + 0.5 + (block.rack_cap_kw - idle_kw) * pick(30, 100) / 100.0);
  }
  spec.blocks.push_back(block);
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_power_reserve_pct(pick(0, 2) * 10);
  return d;
}

// The rule, computed from the test's own records.
struct Model {
  const Topology* t;
  double reclaim = 0;
  std::vector<std::optional<Milliwatts>> reading;
  std::vector<Milliwatts> added;  // estimates placed since the reading, per rack

  std::optional<Milliwatts> Measured(RackId r) const {
    if (!reading[r]) return std::nullopt;
    return *reading[r] + added[r];
  }
  Milliwatts Counted(const Ledger& l, RackId r) const {
    const Milliwatts e = l.rack_draw(r);
    const std::optional<Milliwatts> m = Measured(r);
    if (!m) return e;
    if (*m >= e) return *m;
    return e - static_cast<Milliwatts>(reclaim * static_cast<double>(e - *m));
  }
  // Counted and measured (estimate where unmeasured) draw of a power domain: the sums over its racks.
  std::pair<Milliwatts, Milliwatts> Domain(const Ledger& l, PowerDomainId p) const {
    Milliwatts counted = 0, measured = 0;
    for (RackId r = 0; r < static_cast<RackId>(t->racks().size()); ++r) {
      const auto& chain = t->racks()[r].power_chain;
      if (std::find(chain.begin(), chain.end(), p) == chain.end()) continue;
      counted += Counted(l, r);
      measured += Measured(r).value_or(l.rack_draw(r));
    }
    return {counted, measured};
  }
};

TEST(TelemetryProperty, PlacementsNeverPassTheUsableCapOnCountedOrMeasuredDraw) {
  std::mt19937_64 rng(20261201);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int placed = 0, reclaimed_fits = 0;
  for (int round = 0; round < 300; ++round) {
    auto t = Topology::Build(RandomCluster(rng));
    ASSERT_TRUE(t.ok()) << t.status();
    Ledger l(*t);
    const double reserve = t->policy().power_reserve_fraction;
    Model model{&*t, pick(0, 50) / 100.0, {}, {}};
    auto read = [&] {
      model.reading.assign(t->racks().size(), std::nullopt);
      model.added.assign(t->racks().size(), 0);
      for (RackId r = 0; r < static_cast<RackId>(t->racks().size()); ++r) {
        if (pick(0, 4) == 0) continue;                // no fresh reading: the estimate counts
        const double factor = pick(30, 130) / 100.0;  // from far below to above the estimate
        model.reading[r] = static_cast<Milliwatts>(static_cast<double>(l.rack_draw(r)) * factor);
      }
      l.SetMeasuredDraw(model.reading, model.reclaim, /*count_recent=*/false);
    };
    read();
    std::vector<std::string> held;
    for (int step = 0; step < 40; ++step) {
      if (pick(0, 9) == 0) read();
      if (!held.empty() && pick(0, 3) == 0) {
        const size_t i = pick(0, static_cast<int>(held.size()) - 1);
        l.Release(held[i]);  // the reading keeps counting it until the next one: the model's `added` stays
        held.erase(held.begin() + i);
        continue;
      }
      PlacementRequest req;
      req.gpus = pick(1, 16);
      if (pick(0, 2) == 0) req.watts_per_gpu = pick(300, 1200);
      absl::StatusOr<PlacementOutcome> out = Placer::Place(l, req);
      if (!out.ok()) continue;  // e.g. watts outside the policy
      const auto* d = std::get_if<PlacementDecision>(&*out);
      if (d == nullptr) continue;
      const std::string id = "j" + std::to_string(step);
      ASSERT_TRUE(l.Commit(d->ToAllocation(id)).ok()) << id;
      held.push_back(id);
      ++placed;
      for (const RackPower& rp : d->racks) model.added[rp.rack] += rp.added;
      for (const RackPower& rp : d->racks) {
        const Milliwatts usable = UsableCap(l.rack_cap(rp.rack), reserve);
        ASSERT_EQ(l.counted_rack_draw(rp.rack), model.Counted(l, rp.rack));
        ASSERT_LE(model.Counted(l, rp.rack), usable) << t->racks()[rp.rack].name;
        if (std::optional<Milliwatts> m = model.Measured(rp.rack)) {
          ASSERT_LE(*m, usable) << t->racks()[rp.rack].name;
          if (l.rack_draw(rp.rack) > usable) ++reclaimed_fits;  // the estimate alone would not have fit
        }
        for (PowerDomainId p : t->racks()[rp.rack].power_chain) {
          const auto [counted, measured] = model.Domain(l, p);
          ASSERT_EQ(l.counted_power_domain_draw(p), counted) << t->power_domains()[p].name;
          ASSERT_LE(counted, UsableCap(l.power_domain_cap(p), reserve));
          ASSERT_LE(measured, UsableCap(l.power_domain_cap(p), reserve));
        }
      }
      ASSERT_TRUE(l.CheckInvariants().ok());
    }
  }
  EXPECT_GT(placed, 1000);
  EXPECT_GT(reclaimed_fits, 10);  // reclaim did let work in that the estimate alone would have refused
}

}  // namespace
}  // namespace rackwise
