// Measured power: readings -> per-rack draw, the ledger's counted draw (max(estimate, measured), reclaim),
// the placer refusing a rack that measures above its usable cap, overdraw and lowered limits.
#include "rackwise/telemetry.h"
#include "rackwise/ledger_steering.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "rackwise/placer.h"
#include "rackwise/synthetic_cluster.h"
#include "rackwise/telemetry_tracker.h"

namespace rackwise {
namespace {

// Two H100 racks of 4 nodes: idle 4 x 2.5 kW = 10 kW per rack, 962.5 W per allocated GPU, cap 30 kW.
Topology TwoRacks(double reserve_pct = 0) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 30, 2, 2, 0});
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_power_reserve_pct(reserve_pct);
  auto t = Topology::Build(d);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

TelemetrySettings On(double reclaim_pct = 0) {
  TelemetrySettings s;
  s.enabled = true;
  s.reclaim_fraction = reclaim_pct / 100;
  return s;
}

// GPU watts for every node of a rack, all fresh.
PowerReadings NodesAt(const Topology& t, RackId rack, double gpu_watts, double age_s = 1) {
  PowerReadings r;
  r.nodes_ok = true;
  for (NodeId n : t.racks()[rack].nodes) r.nodes.push_back({t.nodes()[n].name, gpu_watts, age_s});
  return r;
}

TEST(MeasureRacksTest, NodeReadingsAddIdleWatts) {
  Topology t = TwoRacks();
  MeasuredDraw m = MeasureRacks(t, On(), NodesAt(t, 0, 1000));
  ASSERT_TRUE(m.racks[0].has_value());
  EXPECT_EQ(*m.racks[0], 4 * (2'500'000 + 1'000'000));
  EXPECT_FALSE(m.racks[1].has_value());  // no reading for rack 1: it counts its estimate
  EXPECT_EQ(m.state, TelemetryState::kStale);
  EXPECT_EQ(m.measured_racks, 1);
  ASSERT_FALSE(m.problems.empty());
  EXPECT_NE(m.problems[0].find("b0-r0001"), std::string::npos) << m.problems[0];
}

TEST(MeasureRacksTest, FreshWhenEveryRackIsMeasuredAndRackReadingWins) {
  Topology t = TwoRacks();
  PowerReadings r = NodesAt(t, 0, 0);
  PowerReadings r1 = NodesAt(t, 1, 0);
  r.nodes.insert(r.nodes.end(), r1.nodes.begin(), r1.nodes.end());
  r.racks_ok = true;
  r.racks.push_back({"b0-r0001", 21'000, 2});
  TelemetrySettings s = On();
  s.rack_power_query = "sum by (rack) (pdu_watts)";
  MeasuredDraw m = MeasureRacks(t, s, r);
  EXPECT_EQ(m.state, TelemetryState::kFresh);
  EXPECT_EQ(*m.racks[0], 10'000'000);
  EXPECT_EQ(*m.racks[1], 21'000'000);
}

TEST(MeasureRacksTest, StaleBrokenAndMissingReadingsFallBack) {
  Topology t = TwoRacks();
  for (double bad : {std::nan(""), -5.0, 1e12, std::numeric_limits<double>::infinity()}) {
    PowerReadings r = NodesAt(t, 0, 100);
    r.nodes[2].watts = bad;
    EXPECT_FALSE(MeasureRacks(t, On(), r).racks[0].has_value()) << bad;
  }
  EXPECT_TRUE(MeasureRacks(t, On(), NodesAt(t, 0, 100, -4)).racks[0].has_value());  // clocks a little apart
  MeasuredDraw future = MeasureRacks(t, On(), NodesAt(t, 0, 100, -6));
  EXPECT_FALSE(future.racks[0].has_value());
  EXPECT_NE(future.problems[0].find("6 s in the future"), std::string::npos) << future.problems[0];
  PowerReadings old = NodesAt(t, 0, 100, 61);  // stale_after_s 60
  MeasuredDraw m = MeasureRacks(t, On(), old);
  EXPECT_FALSE(m.racks[0].has_value());
  EXPECT_NE(m.problems[0].find("stale"), std::string::npos);
  PowerReadings failed;
  failed.nodes_error = "connection refused";
  m = MeasureRacks(t, On(), failed);
  EXPECT_EQ(m.state, TelemetryState::kStale);
  EXPECT_EQ(m.measured_racks, 0);
  EXPECT_NE(m.problems[0].find("connection refused"), std::string::npos);
  EXPECT_EQ(MeasureRacks(t, TelemetrySettings{}, NodesAt(t, 0, 1)).state, TelemetryState::kOff);
}

TEST(MeasureRacksTest, DuplicateNamesKeepTheLargerReading) {
  Topology t = TwoRacks();
  PowerReadings r = NodesAt(t, 0, 100);
  r.nodes.push_back({r.nodes[0].name, 900, 1});
  r.nodes.push_back({r.nodes[0].name, 50, 1});
  EXPECT_EQ(*MeasureRacks(t, On(), r).racks[0], 4 * 2'500'000 + 3 * 100'000 + 900'000);
}

TEST(LedgerMeasuredTest, CountsTheLargerOfEstimateAndMeasured) {
  Topology t = TwoRacks();
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0xff}}, 0}).ok());                                     // estimate 10 + 7.7 = 17.7 kW
  l.SetMeasuredDraw({Milliwatts{25'000'000}, std::nullopt}, 0, /*count_recent=*/false);  // `a` is in the reading
  EXPECT_EQ(l.counted_rack_draw(0), 25'000'000);
  EXPECT_EQ(l.rack_draw(0), 17'700'000);  // the estimate itself is untouched
  EXPECT_EQ(l.counted_rack_draw(1), l.rack_draw(1));
  EXPECT_EQ(l.RackRoom(0), 5'000'000);
  // Below the estimate, reclaim 0: the estimate counts.
  l.SetMeasuredDraw({Milliwatts{12'000'000}, std::nullopt}, 0);
  EXPECT_EQ(l.counted_rack_draw(0), 17'700'000);
  // Reclaim 50%: half the 5.7 kW gap.
  l.SetMeasuredDraw({Milliwatts{12'000'000}, std::nullopt}, 0.5);
  EXPECT_EQ(l.counted_rack_draw(0), 17'700'000 - 2'850'000);
  // Fractions past 0.5 are clamped: the counted draw never drops to the measured one.
  l.SetMeasuredDraw({Milliwatts{12'000'000}, std::nullopt}, 3);
  EXPECT_EQ(l.counted_rack_draw(0), 17'700'000 - 2'850'000);
  l.ClearMeasuredDraw();
  EXPECT_EQ(l.counted_rack_draw(0), 17'700'000);
  EXPECT_TRUE(l.CheckInvariants().ok());
}

TEST(LedgerMeasuredTest, AllocationsAfterAReadingCountOnTopUntilTwoReadingsPass) {
  Topology t = TwoRacks();
  Ledger l(t);
  l.SetMeasuredDraw({Milliwatts{20'000'000}, std::nullopt}, 0);  // 10 kW over the 10 kW estimate
  ASSERT_TRUE(l.Commit({"a", {{0, 0xff}}, 0}).ok());             // +7.7 kW
  EXPECT_EQ(l.counted_rack_draw(0), 27'700'000);
  l.SetMeasuredDraw({Milliwatts{20'000'000}, std::nullopt}, 0);  // may predate a's ramp-up: a still counts
  EXPECT_EQ(l.counted_rack_draw(0), 27'700'000);
  l.SetMeasuredDraw({Milliwatts{20'000'000}, std::nullopt}, 0);  // now a is in the reading
  EXPECT_EQ(l.counted_rack_draw(0), 20'000'000);
  // Released work leaves the reading as it is (the next reading shows the drop).
  EXPECT_TRUE(l.Release("a"));
  EXPECT_EQ(l.counted_rack_draw(0), 20'000'000);
  // One-shot reads take every held allocation to be in the reading.
  ASSERT_TRUE(l.Commit({"b", {{0, 0xff}}, 0}).ok());
  l.SetMeasuredDraw({Milliwatts{20'000'000}, std::nullopt}, 0, /*count_recent=*/false);
  EXPECT_EQ(l.counted_rack_draw(0), 20'000'000);
}

TEST(LedgerMeasuredTest, PowerDomainsCountTheirRacksMeasuredExcess) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 30, 2, 2, 50});
  auto t = Topology::Build(BuildSyntheticCluster(spec));
  ASSERT_TRUE(t.ok());
  Ledger l(*t);
  ASSERT_EQ(t->power_domains().size(), 1u);
  l.SetMeasuredDraw({Milliwatts{26'000'000}, Milliwatts{4'000'000}}, 0.5);  // +16 kW; -6 kW, half reclaimed
  EXPECT_EQ(l.counted_power_domain_draw(0), 20'000'000 + 16'000'000 - 3'000'000);
  EXPECT_EQ(l.PowerDomainRoom(0), 50'000'000 - 33'000'000);
}

TEST(LedgerMeasuredTest, CommitRefusesWhatTheMeasurementLeavesNoRoomFor) {
  Topology t = TwoRacks();
  Ledger l(t);
  l.SetMeasuredDraw({Milliwatts{29'000'000}, std::nullopt}, 0);
  absl::Status s = l.Commit({"a", {{0, 0b11}}, 0});  // 1.925 kW > 1 kW left
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("measured"), std::string::npos) << s;
  EXPECT_TRUE(l.Commit({"b", {{0, 0b1}}, 0}).ok());  // 962.5 W fits
}

TEST(PlacerMeasuredTest, RackMeasuringAboveItsUsableCapTakesNothingAndSaysWhy) {
  Topology t = TwoRacks(/*reserve_pct=*/10);  // usable 27 kW
  Ledger l(t);
  l.SetMeasuredDraw({Milliwatts{27'500'000}, std::nullopt}, 0.5);
  PlacementRequest r;
  r.gpus = 8;
  r.allowed_nodes = t.racks()[0].nodes;
  absl::StatusOr<PlacementOutcome> out = Placer::Place(l, r);
  ASSERT_TRUE(out.ok());
  const auto* refusal = std::get_if<PlacementRefusal>(&*out);
  ASSERT_NE(refusal, nullptr);
  EXPECT_EQ(refusal->counts[static_cast<int>(NodeReason::kRackPower)], 4);
  EXPECT_NE(refusal->detail.find("rack b0-r0000 measures 27.5 kW (estimate 10.0 kW; usable cap 27.0 kW)"),
            std::string::npos)
      << refusal->detail;
  EXPECT_EQ(Placer::FilterNode(l, r, 0), NodeReason::kRackPower);
  // Stale: the estimate counts again and the rack takes the job.
  l.SetMeasuredDraw({std::nullopt, std::nullopt}, 0.5);
  out = Placer::Place(l, r);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(std::holds_alternative<PlacementDecision>(*out));
  EXPECT_EQ(MeasuredRackNote(l, 0), "");
}

TEST(PlacerMeasuredTest, ReclaimLetsMoreRunButNeverPastTheUsableCap) {
  Topology t = TwoRacks();  // 30 kW cap, 10 kW idle: 20 GPUs' worth at 962.5 W by estimate
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"a", {{0, 0xff}, {1, 0xff}}, 0}).ok());  // 25.4 kW by estimate
  PlacementRequest r;
  r.gpus = 8;
  r.gpus_per_node = 8;
  r.allowed_nodes = t.racks()[0].nodes;
  auto fits = [&] { return std::holds_alternative<PlacementDecision>(*Placer::Place(l, r)); };
  l.SetMeasuredDraw({Milliwatts{15'000'000}, std::nullopt}, 0, false);
  EXPECT_FALSE(fits());  // no reclaim: 25.4 + 7.7 > 30
  l.SetMeasuredDraw({Milliwatts{15'000'000}, std::nullopt}, 0.5, false);
  EXPECT_TRUE(fits());  // counted 25.4 - 5.2 = 20.2; + 7.7 = 27.9 <= 30
  ASSERT_TRUE(l.Commit(std::get<PlacementDecision>(*Placer::Place(l, r)).ToAllocation("b")).ok());
  EXPECT_LE(l.counted_rack_draw(0), l.rack_cap(0));
  EXPECT_LE(*l.measured_rack_draw_now(0), l.rack_cap(0));
  EXPECT_FALSE(fits());  // and no further
}

TEST(OverdrawTest, FindsRacksAboveTheirCapWithTheirJobsAndSteersThem) {
  Topology t = TwoRacks();
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"job-b", {{0, 0xff}}, 0}).ok());
  ASSERT_TRUE(l.Commit({"job-a", {{1, 0x0f}}, 800'000}).ok());
  ASSERT_TRUE(l.Commit({"elsewhere", {{4, 0x0f}}, 0}).ok());
  EXPECT_TRUE(FindOverdraws(l).empty());
  l.SetMeasuredDraw({Milliwatts{31'200'000}, std::nullopt}, 0, /*count_recent=*/false);
  std::vector<Overdraw> over = FindOverdraws(l);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_EQ(OverdrawMessage(l, over[0]),
            "rack b0-r0000 measures 31.2 kW, above its 30.0 kW cap; jobs on it: job-a, job-b");
  // lower_limits steers (ledger_steering.h): 31.2 kW measured, 10 kW idle, the jobs' limits explain 10.9 kW, so
  // 10.3 kW is fixed and the GPUs must shed 1.2 kW: the same share off each job's headroom above its floor.
  LedgerSteering in;
  SteeringPlan plan = PlanLedgerSteering(l, {}, &in);
  ASSERT_EQ(in.allocations.size(), 3u);
  EXPECT_EQ(in.scopes[0].fixed, 20'300'000);
  EXPECT_EQ(in.allocations[0].id, "elsewhere");
  EXPECT_EQ(plan.limits[0], in.allocations[0].declared);  // its rack is under its cap
  auto share = [&](int a) {
    const SteeredAllocation& j = in.allocations[a];
    return static_cast<double>(j.declared - plan.limits[a]) / static_cast<double>(j.declared - j.floor);
  };
  EXPECT_NEAR(share(1), share(2), 1e-5);
  EXPECT_LE(20'300'000 + 4 * plan.limits[1] + 8 * plan.limits[2], 30'000'000);
  EXPECT_GE(20'300'000 + 4 * plan.limits[1] + 8 * plan.limits[2], 30'000'000 - 12);
  // 28.1 kW fixed: the floors (12 x 210 W) cannot meet the cap; the newest (unknown starts: the greater id) goes.
  l.SetMeasuredDraw({Milliwatts{39'000'000}, std::nullopt}, 0, /*count_recent=*/false);
  plan = PlanLedgerSteering(l, {}, &in);
  EXPECT_EQ(plan.requeue, std::vector<int>{2});
}

TEST(OverdrawTest, RequeueNewestTakesTheLatestStartedUntilTheExcessIsGone) {
  Topology t = TwoRacks();
  Ledger l(t);
  ASSERT_TRUE(l.Commit({"job-b", {{0, 0xff}}, 0}).ok());        // 8 x 962.5 W = 7.7 kW
  ASSERT_TRUE(l.Commit({"job-a", {{1, 0x0f}}, 800'000}).ok());  // 4 x 800 W = 3.2 kW
  ASSERT_TRUE(l.Commit({"elsewhere", {{4, 0x0f}}, 0}).ok());
  absl::flat_hash_map<std::string, int64_t> starts = {{"job-b", 200}, {"job-a", 100}};
  auto started = [&](const std::string& id) -> std::optional<int64_t> {
    auto it = starts.find(id);
    return it == starts.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
  l.SetMeasuredDraw({Milliwatts{29'000'000}, std::nullopt}, 0);
  ASSERT_TRUE(FindOverdraws(l).empty());
  l.SetMeasuredDraw({Milliwatts{31'200'000}, std::nullopt}, 0);  // 1.2 kW over
  EXPECT_EQ(PlanRequeueNewest(l, FindOverdraws(l)[0], started), (std::vector<std::string>{"job-b"}));
  starts["job-a"] = 300;  // now job-a is the newest, and its 3.2 kW cover the excess alone
  EXPECT_EQ(PlanRequeueNewest(l, FindOverdraws(l)[0], started), (std::vector<std::string>{"job-a"}));
  l.SetMeasuredDraw({Milliwatts{40'000'000}, std::nullopt}, 0);  // 10 kW over: both go, newest first
  EXPECT_EQ(PlanRequeueNewest(l, FindOverdraws(l)[0], started), (std::vector<std::string>{"job-a", "job-b"}));
  starts.erase("job-b");  // unknown start: counted as newest
  l.SetMeasuredDraw({Milliwatts{31'200'000}, std::nullopt}, 0);
  const Overdraw kept = FindOverdraws(l)[0];
  EXPECT_EQ(PlanRequeueNewest(l, kept, started), (std::vector<std::string>{"job-b"}));
  // An overdraw kept while the ledger changed: a job gone since is skipped, not dereferenced.
  ASSERT_TRUE(l.Release("job-b"));
  EXPECT_EQ(PlanRequeueNewest(l, kept, started), (std::vector<std::string>{"job-a"}));
}

// Two 30 kW racks on a 50 kW row: each rack under its cap, the row over it, by the sum of the racks' readings.
TEST(OverdrawTest, APowerDomainIsOverWhenItsRacksReadingsSumAboveItsCap) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 30, 2, 2, 50});
  absl::StatusOr<Topology> t = Topology::Build(BuildSyntheticCluster(spec));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->power_domains().size(), 1u);
  Ledger l(*t);
  ASSERT_TRUE(l.Commit({"job-a", {{0, 0xff}}, 0}).ok());        // rack 0, 8 x 962.5 W = 7.7 kW, started first
  ASSERT_TRUE(l.Commit({"job-b", {{4, 0x0f}}, 800'000}).ok());  // rack 1, 4 x 800 W = 3.2 kW
  // Only rack 0 read: the row's draw is not measured, so it is not over (whatever its estimate).
  l.SetMeasuredDraw({Milliwatts{28'000'000}, std::nullopt}, 0, /*count_recent=*/false);
  EXPECT_TRUE(FindOverdraws(l).empty());
  l.SetMeasuredDraw({Milliwatts{28'000'000}, Milliwatts{24'000'000}}, 0, /*count_recent=*/false);  // 52 kW
  std::vector<Overdraw> over = FindOverdraws(l);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_EQ(over[0].rack, kNoId);
  EXPECT_EQ(over[0].power_domain, 0);
  EXPECT_EQ(OverdrawMessage(l, over[0]),
            "power domain b0-row00 measures 52.0 kW, above its 50.0 kW cap; jobs on it: job-a, job-b");
  // requeue_newest over the row: job-b (newest) frees 3.2 kW of the 2 kW excess.
  auto started = [](const std::string& id) -> std::optional<int64_t> { return id == "job-a" ? 1 : 2; };
  EXPECT_EQ(PlanRequeueNewest(l, over[0], started), std::vector<std::string>{"job-b"});
  // The tracker says it once, and says when it clears.
  TelemetryTracker tracker;
  PowerReadings readings = NodesAt(*t, 0, 4500);     // 4 x (2.5 + 4.5) = 28 kW
  const PowerReadings rack1 = NodesAt(*t, 1, 3500);  // 24 kW
  readings.nodes.insert(readings.nodes.end(), rack1.nodes.begin(), rack1.nodes.end());
  std::vector<std::string> log = tracker.Apply(On(), readings, &l);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1],
            "OVERDRAW: power domain b0-row00 measures 52.0 kW, above its 50.0 kW cap; jobs on it: job-a, job-b; "
            "nothing more is placed there");
  EXPECT_EQ(tracker.overdrawn_power_domains(), std::vector<PowerDomainId>{0});
  EXPECT_TRUE(tracker.overdrawn_racks().empty());
  EXPECT_TRUE(tracker.Apply(On(), readings, &l).empty());
  for (size_t i = 4; i < readings.nodes.size(); ++i) readings.nodes[i].watts = 2000;  // rack 1 at 18 kW
  EXPECT_EQ(tracker.Apply(On(), readings, &l),
            std::vector<std::string>{"overdraw cleared: power domain b0-row00 is back under its cap"});
}

// Against an independent statement of the rule on random racks: the plan is the shortest prefix of the
// allocations in newest-first order whose charged watts cover the excess (all of them when none does).
TEST(OverdrawTest, RequeueNewestIsTheShortestNewestFirstPrefixCoveringTheExcess) {
  Topology t = TwoRacks();
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    Ledger l(t);
    std::vector<std::pair<int64_t, std::string>> order;  // (start, id)
    std::map<std::string, Milliwatts> watts;
    for (NodeId n : t.racks()[0].nodes) {
      for (int slot = 0; slot < 2; ++slot) {
        if (rng() % 3 == 0) continue;
        const std::string id = absl::StrCat("j", n, "-", slot);
        const Milliwatts per_gpu = 100'000 + static_cast<Milliwatts>(rng() % 900) * 1000;
        ASSERT_TRUE(
            l.Commit({id, {{n, static_cast<GpuMask>(slot == 0 ? 0x0f : 0xf0)}}, per_gpu}, CommitMode::kRecover).ok());
        order.emplace_back(static_cast<int64_t>(rng() % 50), id);
        watts[id] = 4 * per_gpu;
      }
    }
    if (order.empty()) continue;
    const Milliwatts measured = 30'000'001 + static_cast<Milliwatts>(rng() % 20'000) * 1000;
    l.SetMeasuredDraw({measured, std::nullopt}, 0);
    const std::vector<Overdraw> over = FindOverdraws(l);
    ASSERT_EQ(over.size(), 1u);
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second > b.second;
    });
    std::vector<std::string> expected;
    Milliwatts left = measured - l.rack_cap(0);
    for (const auto& [start, id] : order) {
      if (left <= 0) break;
      expected.push_back(id);
      left -= watts[id];
    }
    auto started = [&](const std::string& id) -> std::optional<int64_t> {
      for (const auto& [start, oid] : order)
        if (oid == id) return start;
      return std::nullopt;
    };
    EXPECT_EQ(PlanRequeueNewest(l, over[0], started), expected) << "round " << round;
  }
}

// Steering's setting: job-a on all 8 GPUs of rack 0's first node, on_overdraw lower_limits, and readings of
// every node of both racks (rack 0's at `rack0_watts`, rack 1's at `rack1_watts`).
struct SteeredRacks {
  SteeredRacks(double rack0_watts, double rack1_watts) : readings(NodesAt(t, 0, rack0_watts)) {
    const PowerReadings rack1 = NodesAt(t, 1, rack1_watts);
    readings.nodes.insert(readings.nodes.end(), rack1.nodes.begin(), rack1.nodes.end());
    s.on_overdraw = OverdrawAction::kLowerLimits;
    committed = l.Commit({"job-a", {{0, 0xff}}, 0});
  }
  Topology t = TwoRacks();
  Ledger l{t};
  TelemetrySettings s = On();
  TelemetryTracker tracker;
  PowerReadings readings;
  absl::Status committed;
};

TEST(TelemetryTrackerTest, ReportsEachChangeOnceAndSteersLimits) {
  SteeredRacks racks(1000, 100);
  ASSERT_TRUE(racks.committed.ok()) << racks.committed;
  auto& [t, l, s, tracker, both, committed] = racks;
  std::vector<std::string> log = tracker.Apply(s, both, &l);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "telemetry: fresh (2 of 2 racks measured)");
  EXPECT_TRUE(tracker.Apply(s, both, &l).empty());  // same state: said once
  // Rack 0 at 4 x (2.5 + 5.3) = 31.2 kW: above its 30 kW cap.
  PowerReadings hot = both;
  for (int i = 0; i < 4; ++i) hot.nodes[i].watts = 5300;
  log = tracker.Apply(s, hot, &l);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0],
            "OVERDRAW: rack b0-r0000 measures 31.2 kW, above its 30.0 kW cap; jobs on it: job-a; nothing more is "
            "placed there");
  // 31.2 - 10 kW idle - 7.7 kW of job-a's limit = 13.5 kW fixed: job-a's 8 GPUs get (30 - 23.5) / 8 = 812.5 W.
  EXPECT_EQ(log[1], "steer: job-a: 962 W per GPU -> 812 W (declared 962 W)");
  EXPECT_EQ(tracker.overdrawn_racks(), std::vector<RackId>{0});
  ASSERT_EQ(tracker.lowered_limits().size(), 1u);
  ASSERT_EQ(tracker.new_overdraws().size(), 1u);  // the start of an overdraw, for a face to act on once
  EXPECT_EQ(tracker.new_overdraws()[0].allocations, std::vector<std::string>{"job-a"});
  EXPECT_TRUE(tracker.Apply(s, hot, &l).empty());
  EXPECT_TRUE(tracker.new_overdraws().empty());  // still over, but not new
  PowerReadings failed;
  failed.nodes_error = "timeout";
  log = tracker.Apply(s, failed, &l);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0],
            "telemetry: stale (0 of 2 racks measured; the others count their estimates); node power query "
            "failed: timeout");
  EXPECT_EQ(log[1], "overdraw cleared: rack b0-r0000 is back under its cap");
  // Stale readings do not show that the headroom came back: the limit stays down until fresh ones do.
  ASSERT_EQ(tracker.lowered_limits().size(), 1u);
  EXPECT_EQ(tracker.lowered_limits()[0].to_per_gpu, 812'500);
  log = tracker.Apply(s, both, &l);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1], "steer: job-a: 812 W per GPU -> 962 W (declared 962 W)");
  EXPECT_TRUE(tracker.lowered_limits().empty());
}

// The round after a cut, the reading may still show the jobs at their old limit, or (as here) at the new one while
// it is judged against the old: what they stopped drawing then looks like headroom. It must not raise the limit
// (job-a's GPUs at 775 W would put the rack at 31.2 kW, over its 30 kW cap); the round after, it is judged right.
TEST(TelemetryTrackerTest, ARoundAfterACutDoesNotRaiseTheLimit) {
  SteeredRacks racks(100, 100);
  ASSERT_TRUE(racks.committed.ok()) << racks.committed;
  auto& [t, l, s, tracker, r, committed] = racks;
  r.nodes[0].watts = 7700;  // job-a's 8 GPUs at its 962.5 W
  tracker.Apply(s, r, &l);  // job-a placed before the first reading counts on top of it for two rounds
  tracker.Apply(s, r, &l);
  ASSERT_TRUE(tracker.lowered_limits().empty());
  for (int i = 1; i < 4; ++i) r.nodes[i].watts = 5000;  // nodes 1-3: 15 kW of GPUs no job explains
  // 10 kW idle + 15 kW fixed leave 5 kW: 625 W per GPU.
  std::vector<std::string> log = tracker.Apply(s, r, &l);
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), "steer: job-a: 962 W per GPU -> 625 W (declared 962 W)");
  r.nodes[0].watts = 5000;  // the GPUs now draw their 625 W: the rack measures 30 kW, at its cap
  log = tracker.Apply(s, r, &l);
  EXPECT_EQ(log, std::vector<std::string>{"overdraw cleared: rack b0-r0000 is back under its cap"});
  ASSERT_EQ(tracker.lowered_limits().size(), 1u);
  EXPECT_EQ(tracker.lowered_limits()[0].to_per_gpu, 625'000);
  EXPECT_TRUE(tracker.Apply(s, r, &l).empty());  // judged against 625 W: the same cut, steady
  EXPECT_EQ(tracker.lowered_limits()[0].to_per_gpu, 625'000);
}

TEST(TelemetrySettingsTest, DefaultsAndMapping) {
  v1::ClusterDescription d;
  EXPECT_FALSE(TelemetrySettings::FromDescription(d).enabled);
  v1::Telemetry* t = d.mutable_telemetry();
  t->set_prometheus_url("http://p:9090");
  t->set_reclaim_pct(20);
  t->set_on_overdraw(v1::OVERDRAW_ACTION_REQUEUE_NEWEST);
  TelemetrySettings s = TelemetrySettings::FromDescription(d);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.node_label, "Hostname");
  EXPECT_EQ(s.interval_s, 15);
  EXPECT_EQ(s.stale_after_s, 60);
  EXPECT_DOUBLE_EQ(s.reclaim_fraction, 0.2);
  EXPECT_EQ(s.on_overdraw, OverdrawAction::kRequeueNewest);
  EXPECT_STREQ(OverdrawActionName(s.on_overdraw), "requeue_newest");
  EXPECT_STREQ(TelemetryStateName(TelemetryState::kStale), "stale");
}

}  // namespace
}  // namespace rackwise
