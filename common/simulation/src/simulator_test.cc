// Hand-checked simulator cases: FIFO and EASY backfill order, power caps (rackwise and static-cap wait, the
// baselines run over the cap and the violation is measured), rejections, the metrics' arithmetic, the JSONL line,
// and baselines that no rackwise knob moves.
// Measured power: the meter against the real draw, telemetry replayed, reclaim_pct. Random clusters and the
// independent checker are in tests/sim/.
#include "rackwise/simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "rackwise/sizing.h"
#include "rackwise/trace_generator.h"

namespace rackwise {
namespace {

// H100 nodes (8 GPUs, 2.5 kW idle, 962.5 W per GPU), `nodes_per_rack` per rack.
Topology H100(int gpus, int nodes_per_rack, double rack_cap_kw = 0) {
  SizingParams p = DefaultSizingParams(SizingSystem::kH100);
  p.gpus = gpus;
  p.nodes_per_rack = nodes_per_rack;
  p.rack_cap_kw = rack_cap_kw;
  absl::StatusOr<SizingResult> r = SizeCluster(p);
  EXPECT_TRUE(r.ok());
  absl::StatusOr<Topology> t = Topology::Build(SizingToClusterDescription(p, *r));
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

TraceJob Job(std::string id, double submit, double duration, int gpus, int per_node = 0) {
  TraceJob j;
  j.id = std::move(id);
  j.submit = submit;
  j.duration = duration;
  j.gpus = gpus;
  j.gpus_per_node = per_node;
  return j;
}

SimResult Replay(const Topology& t, const std::vector<TraceJob>& jobs, SimOptions o) {
  o.record_placements = true;
  absl::StatusOr<SimResult> r = Simulate(t, jobs, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimResult{};
}

SimResult Replay(const Topology& t, const std::vector<TraceJob>& jobs, SimPolicy policy, bool backfill = true,
                 double spread_slowdown = 0) {
  SimOptions o;
  o.policy = policy;
  o.backfill = backfill;
  o.spread_slowdown = spread_slowdown;
  return Replay(t, jobs, o);
}

double StartOf(const SimResult& r, const std::vector<TraceJob>& jobs, const std::string& id) {
  for (const SimPlacement& p : r.placements) {
    if (jobs[p.job].id == id) return p.start;
  }
  return -1;
}

TEST(SimulatorTest, EasyBackfillLetsShortJobsPassButProtectsTheHead) {
  Topology t = H100(16, 2);
  std::vector<TraceJob> jobs = {Job("a", 0, 100, 8), Job("b", 1, 100, 16, 8), Job("c", 2, 50, 8), Job("d", 3, 500, 8)};
  for (SimPolicy policy : AllSimPolicies()) {
    SCOPED_TRACE(SimPolicyName(policy));
    SimResult r = Replay(t, jobs, policy);
    EXPECT_EQ(StartOf(r, jobs, "a"), 0);
    EXPECT_EQ(StartOf(r, jobs, "b"), 100);  // reserved at the shadow time
    EXPECT_EQ(StartOf(r, jobs, "c"), 2);    // ends by the shadow time: backfilled
    EXPECT_EQ(StartOf(r, jobs, "d"), 200);  // would delay b: waits
    EXPECT_EQ(r.metrics.completed, 4);
    EXPECT_DOUBLE_EQ(r.metrics.makespan_s, 700);
    // While jobs arrive (0..3 s): a holds 8 GPUs for 3 s, c 8 GPUs for 1 s, out of 16 GPUs.
    EXPECT_NEAR(r.metrics.gpu_utilization_arrivals, (8 * 3 + 8 * 1) / (16.0 * 3), 1e-9);
    SimResult fifo = Replay(t, jobs, policy, /*backfill=*/false);
    EXPECT_EQ(StartOf(fifo, jobs, "c"), 200);
  }
}

TEST(SimulatorTest, CapsMakeRackwiseWaitAndBaselinesOverdraw) {
  // One rack of 4 nodes, capped at 20 kW: idle 10 kW, one busy node adds 7.7 kW, two would need 25.4 kW.
  Topology t = H100(32, 4, 20);
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(Job("j" + std::to_string(i), 0, 100, 8));
  SimResult rw = Replay(t, jobs, SimPolicy::kRackwise);
  EXPECT_DOUBLE_EQ(rw.metrics.makespan_s, 400);
  EXPECT_EQ(rw.metrics.power_violation_kws, 0);
  EXPECT_NEAR(rw.metrics.peak_rack_kw, 17.7, 1e-6);
  EXPECT_NEAR(rw.metrics.gpu_utilization, 0.25, 1e-9);
  EXPECT_NEAR(rw.metrics.gpu_hours, 32 * 100 / 3600.0, 1e-9);
  EXPECT_NEAR(rw.metrics.energy_mwh, 17.7e-3 * 400 / 3600, 1e-12);
  EXPECT_NEAR(rw.metrics.gpu_hours_per_mwh, rw.metrics.gpu_hours / rw.metrics.energy_mwh, 1e-9);
  EXPECT_DOUBLE_EQ(rw.metrics.mean_wait_s, (0 + 100 + 200 + 300) / 4.0);
  EXPECT_DOUBLE_EQ(rw.metrics.p95_wait_s, 300);

  SimResult sc = Replay(t, jobs, SimPolicy::kStaticCap);  // (20 - 10) / 0.9625 = 10 GPUs allowed: one job at a time
  EXPECT_DOUBLE_EQ(sc.metrics.makespan_s, 400);
  EXPECT_EQ(sc.metrics.power_violation_kws, 0);

  for (SimPolicy p : {SimPolicy::kFirstFit, SimPolicy::kSpread, SimPolicy::kTreeBestFit}) {
    SCOPED_TRACE(SimPolicyName(p));
    SimResult b = Replay(t, jobs, p);
    EXPECT_DOUBLE_EQ(b.metrics.makespan_s, 100);
    EXPECT_NEAR(b.metrics.gpu_utilization, 1.0, 1e-9);
    EXPECT_NEAR(b.metrics.peak_rack_kw, 40.8, 1e-6);
    EXPECT_NEAR(b.metrics.rack_violation_kws, 20.8 * 100, 1e-6);        // 40.8 kW against 20 kW for 100 s
    EXPECT_NEAR(b.metrics.domain_violation_kws, 2 * 20.8 * 100, 1e-6);  // the row and the hall: the same cap
    EXPECT_NEAR(b.metrics.power_violation_kws, 3 * 20.8 * 100, 1e-6);
  }
}

TEST(SimulatorTest, JobsThatCanNeverRunAreRejectedNotBlocking) {
  Topology t = H100(32, 4, 20);
  std::vector<TraceJob> jobs = {Job("huge", 0, 10, 64), Job("hot", 1, 10, 16, 8), Job("ok", 2, 10, 8),
                                Job("odd", 3, 10, 9, 3)};
  SimResult rw = Replay(t, jobs, SimPolicy::kRackwise);
  EXPECT_EQ(rw.metrics.rejected, 2);  // 64 > 32 GPUs; 16 GPUs need 25.4 kW under a 20 kW cap
  EXPECT_EQ(rw.metrics.completed, 2);
  EXPECT_EQ(StartOf(rw, jobs, "ok"), 2);
  SimResult ff = Replay(t, jobs, SimPolicy::kFirstFit);
  EXPECT_EQ(ff.metrics.rejected, 1);  // power-unaware: "hot" runs, over the cap
  EXPECT_GT(ff.metrics.power_violation_kws, 0);
}

TEST(SimulatorTest, LocalityAndRails) {
  // Two NVL72 racks; 36-GPU jobs: rackwise keeps each in one rack, spread scatters over both.
  SizingParams p = DefaultSizingParams(SizingSystem::kGb200Nvl72);
  p.gpus = 144;
  absl::StatusOr<SizingResult> s = SizeCluster(p);
  ASSERT_TRUE(s.ok());
  absl::StatusOr<Topology> t = Topology::Build(SizingToClusterDescription(p, *s));
  ASSERT_TRUE(t.ok());
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(Job("j" + std::to_string(i), i, 1000, 36, 4));
  SimResult rw = Replay(*t, jobs, SimPolicy::kRackwise);
  EXPECT_DOUBLE_EQ(rw.metrics.min_domain_pct, 100);
  EXPECT_DOUBLE_EQ(rw.metrics.min_domain_pct_local, 100);
  EXPECT_DOUBLE_EQ(rw.metrics.mean_domains_per_job, 1);
  EXPECT_DOUBLE_EQ(rw.metrics.rail_aligned_pct, 100);
  SimResult sp = Replay(*t, jobs, SimPolicy::kSpread);
  EXPECT_LT(sp.metrics.min_domain_pct, 100);
  EXPECT_GT(sp.metrics.mean_domains_per_job, 1);
}

Topology Nvl72Racks(int racks) {
  SizingParams p = DefaultSizingParams(SizingSystem::kGb200Nvl72);
  p.gpus = 72 * racks;
  absl::StatusOr<SizingResult> s = SizeCluster(p);
  EXPECT_TRUE(s.ok());
  absl::StatusOr<Topology> t = Topology::Build(SizingToClusterDescription(p, *s));
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

TraceJob Local(std::string id, double submit, double duration, int gpus, Locality locality) {
  TraceJob j = Job(std::move(id), submit, duration, gpus, 4);
  j.locality = locality;
  return j;
}

const SimPlacement* PlacementOf(const SimResult& r, const std::vector<TraceJob>& jobs, const std::string& id) {
  for (const SimPlacement& p : r.placements)
    if (jobs[p.job].id == id) return &p;
  return nullptr;
}

TEST(SimulatorTest, ReservationKeepsTheHeadsNvlinkDomainFromLongBackfill) {
  // Two NVL72 racks, 32 GPUs free in each. The head needs a whole rack: rack 1 once `a` ends at 100. `s` (32
  // GPUs, until 502) fits either rack and, counted in GPUs only, fits the head's spare GPUs at its shadow time;
  // in rack 1 it would hold the head back to 502. The reservation keeps it on rack 2.
  Topology t = Nvl72Racks(2);
  std::vector<TraceJob> jobs = {
      Local("a", 0, 100, 40, Locality::kRequired), Local("b", 0, 1000, 40, Locality::kRequired),
      Local("h", 1, 100, 72, Locality::kRequired), Local("s", 2, 500, 32, Locality::kRequired)};
  SimResult r = Replay(t, jobs, SimPolicy::kRackwise);
  const SimPlacement *a = PlacementOf(r, jobs, "a"), *s = PlacementOf(r, jobs, "s"), *h = PlacementOf(r, jobs, "h");
  ASSERT_TRUE(a && s && h);
  EXPECT_EQ(s->start, 2);
  EXPECT_NE(s->racks, a->racks);
  EXPECT_EQ(h->start, 100);
  EXPECT_EQ(h->racks, a->racks);
  ASSERT_FALSE(r.reservations.empty());
  EXPECT_EQ(jobs[r.reservations.front().job].id, "h");
  EXPECT_EQ(r.reservations.front().shadow, 100);
  EXPECT_EQ(r.reservations.front().nodes.size(), 18u);
}

TEST(SimulatorTest, BackfilledPreferredJobWaitsForItsFewestDomains) {
  // 32 GPUs free in each of two racks; the head waits for a whole rack until 1000. `p` (48 GPUs, preferred)
  // could backfill now over both racks; it waits and runs in one rack instead. As the head it would spread.
  Topology t = Nvl72Racks(2);
  std::vector<TraceJob> jobs = {
      Local("a", 0, 1000, 40, Locality::kRequired), Local("b", 0, 1000, 40, Locality::kRequired),
      Local("h", 1, 100, 72, Locality::kRequired), Local("p", 2, 100, 48, Locality::kPreferred)};
  SimResult r = Replay(t, jobs, SimPolicy::kRackwise);
  const SimPlacement* p = PlacementOf(r, jobs, "p");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->domains, 1);
  EXPECT_EQ(p->start, 1000);
  jobs.erase(jobs.begin() + 2);  // no head in front of it: `p` is the head and starts spread out at once
  r = Replay(t, jobs, SimPolicy::kRackwise);
  p = PlacementOf(r, jobs, "p");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->start, 2);
  EXPECT_EQ(p->domains, 2);
}

TEST(SimulatorTest, PreferredHeadWaitsForItsFewestDomainsOnlyWhileThatIsCheaperThanSpreading) {
  // Three NVL72 racks, 32 GPUs free in each. `h` (a whole rack) runs on rack 1 from 1000 to 1100. `p` (48 GPUs,
  // preferred, 1000 s, submitted at 2) reaches the head at 1000, when 64 GPUs are free over two racks and none
  // holds it; rack 1 is expected free 100 s later. Spreading costs it the policy's fraction of its 1000 s: at 0.2
  // (200 s) it waits for rack 1, at 0.05 (50 s) or 0 it spreads at once. A bound of 50 s (preferred_wait_s) is
  // shorter than the expected wait, so it spreads at once too; a bound of 600 s lets it wait.
  SizingParams sp = DefaultSizingParams(SizingSystem::kGb200Nvl72);
  sp.gpus = 216;
  absl::StatusOr<SizingResult> s = SizeCluster(sp);
  ASSERT_TRUE(s.ok());
  std::vector<TraceJob> jobs = {
      Local("a", 0, 1000, 40, Locality::kRequired), Local("b", 0, 5000, 40, Locality::kRequired),
      Local("c", 0, 1300, 40, Locality::kRequired), Local("h", 1, 100, 72, Locality::kRequired),
      Local("p", 2, 1000, 48, Locality::kPreferred)};
  const std::optional<double> none;
  for (const auto& [fraction, bound, start, domains] :
       {std::tuple{0.2, none, 1100.0, 1}, std::tuple{0.05, none, 1000.0, 2}, std::tuple{0.0, none, 1000.0, 2},
        std::tuple{0.2, std::optional<double>(50), 1000.0, 2},
        std::tuple{0.2, std::optional<double>(600), 1100.0, 1}}) {
    SCOPED_TRACE(testing::Message() << fraction << " " << bound.value_or(-1));
    v1::ClusterDescription d = SizingToClusterDescription(sp, *s);
    d.mutable_policy()->set_spread_cost_fraction(fraction);
    if (bound) d.mutable_policy()->set_preferred_wait_s(*bound);
    absl::StatusOr<Topology> t = Topology::Build(d);
    ASSERT_TRUE(t.ok()) << t.status();
    SimResult r = Replay(*t, jobs, SimPolicy::kRackwise);
    EXPECT_EQ(StartOf(r, jobs, "h"), 1000);
    const SimPlacement* p = PlacementOf(r, jobs, "p");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->start, start);
    EXPECT_EQ(p->domains, domains);
  }
}

// Every baseline is what its name says: rackwise's locality knobs (spread_cost_fraction, preferred_wait_s) do not
// move a single placement of any baseline, nor the attempts it makes. rackwise itself moves (or the test is blind).
TEST(SimulatorTest, BaselinesIgnoreRackwisesLocalityKnobs) {
  SizingParams sp = DefaultSizingParams(SizingSystem::kGb200Nvl72);
  sp.gpus = 576;
  sp.rack_cap_kw = 100;  // binds: 27 kW idle + at most 57 GPUs at full load
  absl::StatusOr<SizingResult> sized = SizeCluster(sp);
  ASSERT_TRUE(sized.ok());
  TraceGeneratorParams tp;
  tp.mix = TraceMix::kTraining;
  tp.jobs = 300;
  tp.seed = 7;
  tp.cluster_gpus = sp.gpus;
  tp.node_gpus = 4;
  tp.load = 1.2;
  absl::StatusOr<std::vector<TraceJob>> jobs = GenerateTrace(tp);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const std::optional<double> none;
  const std::vector<std::pair<std::optional<double>, std::optional<double>>> knobs = {
      {none, none}, {0.0, none}, {0.5, none}, {none, 0.0}, {0.2, 900.0}, {1.0, 36000.0}};
  auto placements = [](const SimResult& r) {
    std::vector<std::tuple<int, double, double, int>> out;
    for (const SimPlacement& p : r.placements) out.emplace_back(p.job, p.start, p.end, p.domains);
    return out;
  };
  for (SimPolicy policy : AllSimPolicies()) {
    SCOPED_TRACE(SimPolicyName(policy));
    std::optional<SimResult> first;
    bool moved = false;
    for (const auto& [fraction, bound] : knobs) {
      v1::ClusterDescription d = SizingToClusterDescription(sp, *sized);
      if (fraction) d.mutable_policy()->set_spread_cost_fraction(*fraction);
      if (bound) d.mutable_policy()->set_preferred_wait_s(*bound);
      absl::StatusOr<Topology> t = Topology::Build(d);
      ASSERT_TRUE(t.ok()) << t.status();
      SimResult r = Replay(*t, *jobs, policy, /*backfill=*/true, /*spread_slowdown=*/0.2);
      if (!first) {
        first = r;
        continue;
      }
      const bool same =
          placements(r) == placements(*first) && r.metrics.placement_attempts == first->metrics.placement_attempts;
      moved |= !same;
      if (policy != SimPolicy::kRackwise) {
        EXPECT_TRUE(same) << "knobs " << fraction.value_or(-1) << " / " << bound.value_or(-1);
        EXPECT_EQ(r.metrics.goodput, first->metrics.goodput);
      }
    }
    if (policy == SimPolicy::kRackwise) {
      EXPECT_TRUE(moved);
    }
  }
}

TEST(SimulatorTest, SpreadSlowdownStretchesOnlyJobsOutsideTheirFewestDomains) {
  // 32 GPUs free in each of two racks. `p` (48 GPUs, preferred) is the head and starts at once over both racks;
  // `q` (16 GPUs) fits one rack. With a 50% slowdown only `p` runs longer, and the work done falls below the
  // time GPUs were held.
  Topology t = Nvl72Racks(2);
  std::vector<TraceJob> jobs = {
      Local("a", 0, 1000, 40, Locality::kRequired), Local("b", 0, 1000, 40, Locality::kRequired),
      Local("p", 1, 100, 48, Locality::kPreferred), Local("q", 2, 100, 16, Locality::kRequired)};
  for (double slowdown : {0.0, 0.5}) {
    SCOPED_TRACE(slowdown);
    const SimResult r = Replay(t, jobs, SimPolicy::kRackwise, /*backfill=*/true, slowdown);
    const SimPlacement *p = PlacementOf(r, jobs, "p"), *q = PlacementOf(r, jobs, "q");
    ASSERT_TRUE(p && q);
    EXPECT_EQ(p->domains, 2);
    EXPECT_EQ(p->slowed, slowdown > 0);
    EXPECT_DOUBLE_EQ(p->end - p->start, 100 * (1 + slowdown));
    EXPECT_EQ(q->domains, 1);
    EXPECT_FALSE(q->slowed);
    EXPECT_DOUBLE_EQ(q->end - q->start, 100);
    const double held = (40 + 40) * 1000 + 48 * 100 * (1 + slowdown) + 16 * 100;
    EXPECT_NEAR(r.metrics.gpu_utilization, held / (144 * r.metrics.makespan_s), 1e-9);
    EXPECT_NEAR(r.metrics.goodput, (held - 48 * 100 * slowdown) / (144 * r.metrics.makespan_s), 1e-9);
  }
  SimOptions bad;
  for (double s : {-0.1, 11.0, std::nan("")}) {
    bad.spread_slowdown = s;
    EXPECT_EQ(Simulate(t, jobs, bad).status().code(), absl::StatusCode::kInvalidArgument) << s;
  }
}

TEST(SimulatorTest, PlacementLineAndDeterminism) {
  Topology t = H100(16, 2);
  std::vector<TraceJob> jobs = {Job("x\"1", 0, 10.5, 12, 0)};
  SimResult r = Replay(t, jobs, SimPolicy::kFirstFit);
  ASSERT_EQ(r.placements.size(), 1u);
  EXPECT_EQ(PlacementJsonLine(t, jobs, r.placements[0]),
            R"({"id":"x\"1","start":0,"end":10.5,"nodes":["gpu001","gpu002"],)"
            R"("gpus":{"gpu001":[0,1,2,3,4,5,6,7],"gpu002":[0,1,2,3]},"domains":2,"racks":["r01"]})");
  EXPECT_FALSE(r.placements[0].rail_aligned);
  SimResult again = Replay(t, jobs, SimPolicy::kFirstFit);
  EXPECT_EQ(PlacementJsonLine(t, jobs, again.placements[0]), PlacementJsonLine(t, jobs, r.placements[0]));
}

TEST(SimulatorTest, PolicyNames) {
  for (SimPolicy p : AllSimPolicies()) {
    absl::StatusOr<SimPolicy> back = ParseSimPolicy(SimPolicyName(p));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, p);
  }
  EXPECT_FALSE(ParseSimPolicy("best").ok());
}

// Measured power: jobs draw their trace's measured watts per GPU, the meter counts cap excursions
// against that real draw, and with SimOptions::telemetry the replay feeds it to the ledger as fresh readings,
// so that placements count max(estimate, measured) and reclaim_pct lets them use part of the gap. Random traces
// against an independent sweep of the draw: tests/sim/simulator_property_test.cc.
TraceJob Measured(TraceJob j, double declared, double measured) {
  j.watts_per_gpu = declared;
  j.measured_watts_per_gpu = measured;
  return j;
}

SimOptions Telemetry(bool on, double reclaim = 0) {
  SimOptions o;
  o.telemetry = on;
  o.reclaim_fraction = reclaim;
  return o;
}

// Two 8-GPU jobs declare 500 W per GPU and draw 700 W: the ledger lets both in under a 14 kW cap
// (5 + 16 x 0.5 = 13 kW counted), the hardware draws 5 + 16 x 0.7 = 16.2 kW. Without telemetry the meter must
// see it: this is the check that can fail.
TEST(SimulatorTest, JobsDrawingMoreThanDeclaredExceedTheCapWithoutTelemetry) {
  const Topology t = H100(16, 2, 14);
  const std::vector<TraceJob> jobs = {Measured(Job("a", 0, 100, 8), 500, 700), Measured(Job("b", 1, 100, 8), 500, 700)};
  const SimResult off = Replay(t, jobs, Telemetry(false));
  EXPECT_EQ(StartOf(off, jobs, "b"), 1);
  EXPECT_EQ(off.metrics.cap_excursions, 3);  // the rack, its row and the hall: all three capped at 14 kW
  // 2.2 kW over from t=1 to t=100, when a ends.
  EXPECT_NEAR(off.metrics.rack_violation_kws, 2.2 * 99, 1e-6);
  EXPECT_NEAR(off.metrics.domain_violation_kws, 2 * 2.2 * 99, 1e-6);
  EXPECT_NEAR(off.metrics.peak_rack_kw, 16.2, 1e-9);
  // With telemetry the second job sees rack 10.6 kW measured (above the 9 kW estimate) and waits for the first.
  const SimResult on = Replay(t, jobs, Telemetry(true));
  EXPECT_EQ(StartOf(on, jobs, "b"), 100);
  EXPECT_EQ(on.metrics.cap_excursions, 0);
  EXPECT_EQ(on.metrics.power_violation_kws, 0);
}

// Eight 2-GPU jobs, one a second, counted at 962.5 W per GPU and measuring 500 W. By the estimate four fit
// under 14 kW (5 + 4 x 1.925 = 12.7 kW). With reclaim_pct 50, at t=4 the rack measures 9 kW against 12.7 kW
// estimated, so it counts 12.7 - (12.7 - 9) / 2 = 10.85 kW and the fifth job (1.925 kW) starts at once.
TEST(SimulatorTest, ReclaimUsesPartOfTheGapAndNeverPassesTheCap) {
  const Topology t = H100(16, 2, 14);
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 8; ++i)
    jobs.push_back(Measured(Job(std::string(1, static_cast<char>('a' + i)), i, 1000, 2), 0, 500));
  const SimResult none = Replay(t, jobs, Telemetry(false));
  const SimResult zero = Replay(t, jobs, Telemetry(true, 0));
  const SimResult half = Replay(t, jobs, Telemetry(true, 0.5));
  EXPECT_EQ(StartOf(none, jobs, "e"), 1000);
  EXPECT_EQ(StartOf(zero, jobs, "e"), 1000);  // max(estimate, measured) is the estimate here
  EXPECT_EQ(StartOf(half, jobs, "e"), 4);
  EXPECT_EQ(StartOf(half, jobs, "f"), 1000);  // 14.625 - 4.625 / 2 + 1.925 = 14.24 kW would pass the cap
  EXPECT_LT(half.metrics.makespan_s, zero.metrics.makespan_s);
  for (const SimResult* r : {&none, &zero, &half}) {
    EXPECT_EQ(r->metrics.cap_excursions, 0);
    EXPECT_EQ(r->metrics.power_violation_kws, 0);
    EXPECT_LE(r->metrics.peak_rack_kw, 14);
  }
  // The meter measures the real draw: 5 kW idle + 2 GPUs x 0.5 kW per job.
  EXPECT_NEAR(half.metrics.peak_rack_kw, 5 + 5 * 1.0, 1e-9);
}

// Without a measured column nothing changes: real draw is the counted draw, telemetry reads the estimate.
TEST(SimulatorTest, UnmeasuredTracesReplayAsBefore) {
  const Topology t = H100(16, 2, 14);
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back(Job(std::string(1, static_cast<char>('a' + i)), i, 50 + i, 2 + i % 3 * 2));
  const SimResult off = Replay(t, jobs, Telemetry(false)), on = Replay(t, jobs, Telemetry(true, 0.5));
  ASSERT_EQ(off.placements.size(), on.placements.size());
  for (size_t i = 0; i < off.placements.size(); ++i) {
    EXPECT_EQ(off.placements[i].start, on.placements[i].start);
    EXPECT_EQ(off.placements[i].nodes, on.placements[i].nodes);
  }
  EXPECT_EQ(off.metrics.energy_mwh, on.metrics.energy_mwh);
}

TEST(SimulatorTest, RejectsReclaimAboveHalfAndAbsurdMeasurements) {
  const Topology t = H100(16, 2, 14);
  SimOptions o;
  o.telemetry = true;
  o.reclaim_fraction = 0.6;
  EXPECT_EQ(Simulate(t, {Job("a", 0, 10, 2)}, o).status().code(), absl::StatusCode::kInvalidArgument);
  o.reclaim_fraction = 0.2;
  EXPECT_EQ(Simulate(t, {Measured(Job("a", 0, 10, 2), 0, 1e9)}, o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rackwise
