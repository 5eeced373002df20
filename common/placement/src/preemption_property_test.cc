// Property test: PlanPreemption against an independent exhaustive checker on small random capped clusters. The
// checker tries every subset of the candidates on its own copy of the ledger (Placer::Place with the subset
// released) and keeps the cheapest in the documented order (hours, jobs, priority sum, ids). Checked:
//  - a plan exactly when some subset makes room, and then the checker's victims (hence its cost);
//  - the plan's decision is valid on the ledger without the victims (under the usable caps) and is exactly what
//    Place gives on a copy of the ledger without them;
//  - no victim can be dropped with the job still placed;
//  - the bounded search alone (no exhaustive stage), and the exhaustive stage cut short by a tiny budget, find a
//    plan exactly when one exists, valid and minimal, and never cheaper than the optimum.
// Some ledgers carry power readings (telemetry), where the planner remakes its scratch copy after a trial.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <tuple>
#include <variant>

#include "preemption_expect.h"
#include "rackwise/placer.h"
#include "rackwise/preemption.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

using Rng = std::mt19937_64;
int Pick(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
double Real(Rng& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

// A few racks whose caps (rack, row, hall) bind more often than not, so that power decides as often as GPUs.
v1::ClusterDescription SmallCappedCluster(Rng& rng, int most_racks) {
  SyntheticClusterSpec spec;
  for (int b = Pick(rng, 1, 2); b > 0; --b) {
    RackBlock block;
    block.system = static_cast<ReferenceSystem>(Pick(rng, 0, 2));
    block.racks = Pick(rng, 1, most_racks);
    block.nodes_per_rack = block.system == ReferenceSystem::kGb200Nvl72 ? Pick(rng, 2, 6) : Pick(rng, 1, 3);
    const v1::NodeType type = ReferenceNodeType(block.system);
    const double idle_kw = block.nodes_per_rack * type.idle_watts() / 1000.0;
    const double full_kw = block.nodes_per_rack * type.node_watts() / 1000.0;
    if (Pick(rng, 0, 2) > 0) block.rack_cap_kw = Real(rng, idle_kw + 0.5, full_kw);
    block.racks_per_su = Pick(rng, 1, 2);
    if (Pick(rng, 0, 1)) {
      block.racks_per_row = Pick(rng, 1, 3);
      const double rack_kw = block.rack_cap_kw > 0 ? block.rack_cap_kw : full_kw;
      block.row_cap_kw = Real(rng, block.racks_per_row * idle_kw + 0.5, block.racks_per_row * rack_kw);
    }
    spec.blocks.push_back(block);
  }
  if (Pick(rng, 0, 3) == 0) spec.hall_cap_kw = Real(rng, 10, 150);
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  if (Pick(rng, 0, 3) == 0) d.mutable_policy()->set_power_reserve_pct(Pick(rng, 1, 15));
  return d;
}

PlacementRequest RandomJob(Rng& rng, const Topology& t, const std::string& id) {
  PlacementRequest r;
  r.id = id;
  r.gpus_per_node = std::vector<int>{0, 0, 0, 2, 4, 8}[Pick(rng, 0, 5)];
  r.gpus = r.gpus_per_node > 0 ? r.gpus_per_node * Pick(rng, 1, 3)
                               : std::vector<int>{1, 2, 3, 4, 8, 12, 16, 24, 36}[Pick(rng, 0, 8)];
  r.locality = std::vector<std::optional<Locality>>{std::nullopt, Locality::kRequired, Locality::kPreferred,
                                                    Locality::kNone}[Pick(rng, 0, 3)];
  if (Pick(rng, 0, 3) == 0) r.watts_per_gpu = Pick(rng, 400, 1200);
  if (Pick(rng, 0, 3) == 0) {
    for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
      if (Pick(rng, 0, 1)) r.allowed_nodes.push_back(n);
  }
  return r;
}

// Random jobs placed and committed, as a scheduler would have started them.
void Fill(Rng& rng, Ledger& ledger, int most_jobs) {
  for (int i = Pick(rng, 2, most_jobs); i > 0; --i) {
    PlacementRequest job = RandomJob(rng, ledger.topology(), "run" + std::to_string(i));
    job.locality = Locality::kNone;
    absl::StatusOr<PlacementOutcome> out = Placer::Place(ledger, job);
    if (!out.ok()) continue;
    if (const auto* d = std::get_if<PlacementDecision>(&*out)) {
      ASSERT_TRUE(CommitWithinUsableCaps(ledger, d->ToAllocation(job.id)).ok());
    }
  }
}

std::vector<PreemptionCandidate> RandomCandidates(Rng& rng, const Ledger& ledger, size_t most) {
  std::vector<PreemptionCandidate> out;
  // Quarter hours add up exactly in any order, so the checker's plain sums tie where the planner's do.
  auto random_candidate = [&](const std::string& id) {
    return PreemptionCandidate{id, Pick(rng, -3, 3), Pick(rng, 0, 8) * 0.25};
  };
  for (const Allocation* a : ledger.Allocations())
    if (Pick(rng, 0, 3) > 0) out.push_back(random_candidate(a->id));
  if (Pick(rng, 0, 4) == 0) out.push_back(random_candidate("not-held"));
  std::shuffle(out.begin(), out.end(), rng);
  if (out.size() > most) out.resize(most);
  return out;
}

std::optional<PlacementDecision> PlaceWithout(const Ledger& ledger, const PlacementRequest& r,
                                              const std::vector<std::string>& victims) {
  Ledger copy = ledger;
  for (const std::string& id : victims) copy.Release(id);
  absl::StatusOr<PlacementOutcome> out = Placer::Place(copy, r);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok() || !std::holds_alternative<PlacementDecision>(*out)) return std::nullopt;
  return std::get<PlacementDecision>(*out);
}

struct Cheapest {
  double hours = 0;
  size_t jobs = 0;
  int64_t priority = 0;
  std::vector<std::string> victims;  // sorted
  auto Key() const { return std::tie(hours, jobs, priority, victims); }
};

// The checker: every subset, each on a fresh copy of the ledger.
std::optional<Cheapest> Exhaustive(const Ledger& ledger, const PlacementRequest& r,
                                   const std::vector<PreemptionCandidate>& candidates) {
  std::optional<Cheapest> best;
  for (uint32_t mask = 0; mask < (uint32_t{1} << candidates.size()); ++mask) {
    Cheapest c;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (!((mask >> i) & 1)) continue;
      c.hours += candidates[i].lost_gpu_hours;
      c.priority += candidates[i].priority;
      c.victims.push_back(candidates[i].id);
    }
    c.jobs = c.victims.size();
    std::sort(c.victims.begin(), c.victims.end());
    if (best && !(c.Key() < best->Key())) continue;
    if (PlaceWithout(ledger, r, c.victims)) best = std::move(c);
  }
  return best;
}

Cheapest CostOf(const PreemptionPlan& plan, const std::vector<PreemptionCandidate>& candidates) {
  Cheapest c{0, plan.victims.size(), 0, plan.victims};
  for (const PreemptionCandidate& candidate : candidates) {
    if (std::find(plan.victims.begin(), plan.victims.end(), candidate.id) == plan.victims.end()) continue;
    c.hours += candidate.lost_gpu_hours;
    c.priority += candidate.priority;
  }
  return c;
}

// Valid where Place would put it once the victims are gone, and no victim can be spared.
void ExpectValidAndMinimal(const Ledger& ledger, const PlacementRequest& r, const PreemptionPlan& plan) {
  ExpectPreemptionPlanHolds(ledger, r, plan);
  std::optional<PlacementDecision> fresh = PlaceWithout(ledger, r, plan.victims);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(plan.decision.domains, fresh->domains);
  EXPECT_EQ(plan.decision.nodes, fresh->nodes);
  for (size_t i = 0; i < plan.victims.size(); ++i) {
    std::vector<std::string> fewer = plan.victims;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(i));
    EXPECT_FALSE(PlaceWithout(ledger, r, fewer).has_value()) << plan.victims[i] << " could be spared";
  }
}

constexpr int kRounds = 5000;

TEST(PreemptionPropertyTest, MatchesAnExhaustiveCheckerOnSmallCappedClusters) {
  Rng rng(20261205);
  int with_victims = 0, without_victims = 0, none = 0, bounded_worse = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    absl::StatusOr<Topology> t = Topology::Build(SmallCappedCluster(rng, 3));
    ASSERT_TRUE(t.ok()) << t.status();
    auto ledger = std::make_unique<Ledger>(*t);
    Fill(rng, *ledger, 12);
    if (Pick(rng, 0, 3) == 0) {  // telemetry: trials touching these racks remake the planner's scratch copy
      std::vector<std::optional<Milliwatts>> readings;
      for (RackId r = 0; r < static_cast<RackId>(t->racks().size()); ++r)
        readings.push_back(static_cast<Milliwatts>(ledger->rack_draw(r) * Real(rng, 0.8, 1.1)));
      ledger->SetMeasuredDraw(readings, 0.2);
    }
    const PlacementRequest request = RandomJob(rng, *t, "pending");
    const std::vector<PreemptionCandidate> candidates = RandomCandidates(rng, *ledger, 10);
    const std::optional<Cheapest> best = Exhaustive(*ledger, request, candidates);

    auto plan = PlanPreemption(*ledger, request, candidates, {14, 1 << 20});
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->has_value(), best.has_value());
    if (!best) {
      ++none;
    } else {
      EXPECT_EQ(CostOf(**plan, candidates).Key(), best->Key());
      ExpectValidAndMinimal(*ledger, request, **plan);
      ++(best->victims.empty() ? without_victims : with_victims);
    }

    // The bounded search alone, and with so few calls that the exhaustive stage runs out and hands over to it.
    for (const PreemptionLimits limits : {PreemptionLimits{0, 512}, PreemptionLimits{14, 3}}) {
      auto bounded = PlanPreemption(*ledger, request, candidates, limits);
      ASSERT_TRUE(bounded.ok()) << bounded.status();
      ASSERT_EQ(bounded->has_value(), best.has_value());
      if (!best) continue;
      ExpectValidAndMinimal(*ledger, request, **bounded);
      EXPECT_FALSE(CostOf(**bounded, candidates).Key() < best->Key());
      if (limits.exhaustive_candidates == 0 && best->Key() < CostOf(**bounded, candidates).Key()) ++bounded_worse;
    }
  }
  // Not vacuous: every kind of answer came up often.
  EXPECT_GT(with_victims, 40);
  EXPECT_GT(without_victims, 40);
  EXPECT_GT(none, 40);
  RecordProperty("with_victims", with_victims);
  RecordProperty("bounded_worse", bounded_worse);
  std::printf("with victims %d, without %d, none %d; bounded search dearer than the optimum in %d\n", with_victims,
              without_victims, none, bounded_worse);
}

// The bounded search on up to 40 candidates on up to 8 racks (the exhaustive stage only up to 4, and 64 calls),
// where the checker cannot try every subset: a plan exactly when the job fits with every candidate gone, valid
// and minimal.
TEST(PreemptionPropertyTest, BoundedSearchIsValidAndMinimalOnManyCandidates) {
  Rng rng(7);
  int found = 0, past_exhaustive = 0;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    absl::StatusOr<Topology> t = Topology::Build(SmallCappedCluster(rng, 8));
    ASSERT_TRUE(t.ok()) << t.status();
    auto ledger = std::make_unique<Ledger>(*t);
    Fill(rng, *ledger, 60);
    const PlacementRequest request = RandomJob(rng, *t, "pending");
    const std::vector<PreemptionCandidate> candidates = RandomCandidates(rng, *ledger, 40);
    std::vector<std::string> everyone;
    for (const PreemptionCandidate& c : candidates) everyone.push_back(c.id);
    past_exhaustive += candidates.size() > 4;
    auto plan = PlanPreemption(*ledger, request, candidates, {4, 64});
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->has_value(), PlaceWithout(*ledger, request, everyone).has_value());
    if (!*plan) continue;
    ++found;
    ExpectValidAndMinimal(*ledger, request, **plan);
  }
  EXPECT_GT(found, 50);
  EXPECT_GT(past_exhaustive, 50);
}

}  // namespace
}  // namespace rackwise
