// Two owners on shared racks (rackwise/split_simulator.h): caps hold at every instant in both modes, a static
// owner keeps to its share, sharing runs what static halves cannot, every job stays on its owner's nodes, and
// where caps do not bind each owner fares exactly as it would alone. Draws and shares are recomputed here from
// the placements, not read from the simulator's meter.
#include "rackwise/split_simulator.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <map>
#include <set>
#include <string>

#include "rackwise/sizing.h"
#include "rackwise/trace_generator.h"

namespace rackwise {
namespace {

Topology Sized(SizingSystem system, int gpus, int nodes_per_rack, int racks_per_row, double rack_cap_kw,
               double row_cap_pct) {
  SizingParams p = DefaultSizingParams(system);
  p.gpus = gpus;
  if (nodes_per_rack > 0) p.nodes_per_rack = nodes_per_rack;
  p.racks_per_row = racks_per_row;
  p.rack_cap_kw = rack_cap_kw;
  p.row_cap_pct = row_cap_pct;
  absl::StatusOr<SizingResult> r = SizeCluster(p);
  EXPECT_TRUE(r.ok()) << r.status();
  absl::StatusOr<Topology> t = Topology::Build(SizingToClusterDescription(p, *r));
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

// 512 H100 GPUs, 4 nodes per rack, rows of 4 racks; racks at 30 kW (of 40.8 at full load), rows at 80%.
Topology CappedH100() { return Sized(SizingSystem::kH100, 512, 4, 4, 30, 80); }

std::vector<TraceJob> Trace(int cluster_gpus, int jobs, double load, int node_gpus = 8) {
  TraceGeneratorParams g;
  g.node_gpus = node_gpus;
  g.mix = TraceMix::kResearch;
  g.jobs = jobs;
  g.seed = 7;
  g.cluster_gpus = cluster_gpus;
  g.load = load;
  g.watts_fraction = 0.3;
  g.watts_per_gpu = 600;
  absl::StatusOr<std::vector<TraceJob>> t = GenerateTrace(g);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : std::vector<TraceJob>{};
}

SplitResult Split(const Topology& t, const std::vector<TraceJob>& jobs, SplitOptions split,
                  SimPolicy policy = SimPolicy::kRackwise) {
  SimOptions o;
  o.policy = policy;
  o.record_placements = true;
  absl::StatusOr<SplitResult> r = SimulateSplit(t, jobs, o, split);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SplitResult{};
}

SplitOptions Mode(SplitMode mode, double share = 0.5) {
  SplitOptions s;
  s.mode = mode;
  s.static_share = share;
  return s;
}

// What each rack and power domain draws above idle, per owner, at every instant something starts or ends: the
// running placements' GPUs at what the ledger charges (declared watts, else the node type's).
struct Draws {
  double at = 0;
  std::vector<std::array<Milliwatts, 2>> rack, power_domain;
};

std::vector<Draws> DrawsOverTime(const Topology& t, const SplitResult& r) {
  std::set<double> instants;
  for (const SplitOwnerResult& o : r.owners)
    for (const SimPlacement& p : o.placements) instants.insert(p.start);
  std::vector<Draws> out;
  for (double at : instants) {
    Draws d;
    d.at = at;
    d.rack.assign(t.racks().size(), {0, 0});
    d.power_domain.assign(t.power_domains().size(), {0, 0});
    for (int owner = 0; owner < 2; ++owner) {
      for (const SimPlacement& p : r.owners[owner].placements) {
        if (!(p.start <= at && at < p.end)) continue;
        for (const NodeGpus& ng : p.nodes) {
          const Milliwatts per_gpu = p.per_gpu > 0 ? p.per_gpu : t.type_of(ng.node).per_gpu;
          const Milliwatts w = std::popcount(ng.gpus) * per_gpu;
          const RackId rack = t.nodes()[ng.node].rack;
          d.rack[rack][owner] += w;
          for (PowerDomainId pd : t.racks()[rack].power_chain) d.power_domain[pd][owner] += w;
        }
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

// The capped HGX cluster and its random trace, replayed in each mode for `check(topology, jobs, result)`.
template <typename Check>
void ForEachModeOnCappedH100(Check check) {
  const Topology t = CappedH100();
  const std::vector<TraceJob> jobs = Trace(t.total_gpus(), 600, 1.5);
  for (SplitMode mode : {SplitMode::kShared, SplitMode::kStatic}) {
    SCOPED_TRACE(SplitModeName(mode));
    check(t, jobs, Split(t, jobs, Mode(mode)));
  }
}

TEST(SplitSimulatorTest, NoCapIsPassedAtAnyInstantInEitherMode) {
  ForEachModeOnCappedH100([](const Topology& t, const std::vector<TraceJob>& jobs, const SplitResult& r) {
    EXPECT_EQ(r.overall.completed + r.overall.rejected, static_cast<int>(jobs.size()));
    EXPECT_GT(r.overall.completed, 500);
    EXPECT_EQ(r.overall.power_violation_kws, 0);
    EXPECT_EQ(r.overall.cap_excursions, 0);
    int checked = 0;
    for (const Draws& d : DrawsOverTime(t, r)) {
      for (RackId k = 0; k < static_cast<RackId>(t.racks().size()); ++k)
        ASSERT_LE(t.racks()[k].idle + d.rack[k][0] + d.rack[k][1], t.racks()[k].cap) << "rack " << k << " at " << d.at;
      for (PowerDomainId k = 0; k < static_cast<PowerDomainId>(t.power_domains().size()); ++k)
        ASSERT_LE(t.power_domains()[k].idle + d.power_domain[k][0] + d.power_domain[k][1], t.power_domains()[k].cap)
            << "power domain " << k << " at " << d.at;
      ++checked;
    }
    EXPECT_GT(checked, 500);
  });
}

// Which owners have nodes under each rack and each power domain.
struct Presence {
  std::vector<std::array<bool, 2>> rack, power_domain;
};

Presence PresenceOf(const Topology& t, const std::vector<int>& node_owner) {
  Presence p{std::vector<std::array<bool, 2>>(t.racks().size(), {false, false}),
             std::vector<std::array<bool, 2>>(t.power_domains().size(), {false, false})};
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    const RackId r = t.nodes()[n].rack;
    p.rack[r][node_owner[n]] = true;
    for (PowerDomainId pd : t.racks()[r].power_chain) p.power_domain[pd][node_owner[n]] = true;
  }
  return p;
}

// Static, owner 0 with 30% and owner 1 with 70% (uneven, so that swapped shares are caught): at every instant each
// owner adds at most its share of every budget (usable cap less idle) both owners have nodes under, and at most the
// whole of a budget only its own nodes draw from. Returns, per owner, the highest share of a shared budget it used
// and the highest share of a budget of its own.
std::array<std::array<double, 2>, 2> CheckStaticShares(const Topology& t, const std::vector<TraceJob>& jobs) {
  const double share = 0.3;
  const SplitResult r = Split(t, jobs, Mode(SplitMode::kStatic, share));
  const Presence presence = PresenceOf(t, r.node_owner);
  const double reserve = t.policy().power_reserve_fraction;
  const std::array<double, 2> shares = {share, 1 - share};
  std::array<std::array<double, 2>, 2> peak{};  // [owner][0: shared budgets, 1: its own]
  auto check = [&](Milliwatts added, Milliwatts cap, Milliwatts idle, const std::array<bool, 2>& has, int owner) {
    const double budget = UsableCap(cap, reserve) - idle;
    const bool both = has[0] && has[1];
    EXPECT_LE(added, (both ? shares[owner] : 1.0) * budget) << SplitOwnerName(owner);
    double& p = peak[owner][both ? 0 : 1];
    p = std::max(p, added / budget);
  };
  for (const Draws& d : DrawsOverTime(t, r)) {
    for (int owner = 0; owner < 2; ++owner) {
      for (RackId k = 0; k < static_cast<RackId>(t.racks().size()); ++k)
        check(d.rack[k][owner], t.racks()[k].cap, t.racks()[k].idle, presence.rack[k], owner);
      for (PowerDomainId k = 0; k < static_cast<PowerDomainId>(t.power_domains().size()); ++k)
        check(d.power_domain[k][owner], t.power_domains()[k].cap, t.power_domains()[k].idle, presence.power_domain[k],
              owner);
    }
  }
  return peak;
}

TEST(SplitSimulatorTest, StaticOwnersNeverAddMoreThanTheirShareOfAnyBudget) {
  // HGX: every rack and row has both owners' nodes. The shares bind: each owner comes close to its own at some
  // instant (else the check proves little).
  const Topology hgx = CappedH100();
  std::array<std::array<double, 2>, 2> peak = CheckStaticShares(hgx, Trace(hgx.total_gpus(), 600, 1.5));
  EXPECT_GT(peak[0][0], 0.8 * 0.3);
  EXPECT_GT(peak[1][0], 0.8 * 0.7);
  // NVL72: whole racks alternate, so rows are shared and racks are not: an owner may fill its own rack's budget
  // past its share (nothing of it would go to the other owner), never a row's.
  const Topology nvl = Sized(SizingSystem::kGb200Nvl72, 1152, 0, 4, 110, 80);
  peak = CheckStaticShares(nvl, Trace(nvl.total_gpus(), 600, 1.5, 4));
  EXPECT_GT(peak[0][1], 0.3);
  EXPECT_GT(peak[0][0], 0.8 * 0.3);
}

// One row of two racks, two H100 nodes each; the row's budget above idle is about 20 kW (72% of 42 kW less
// 10 kW idle). Owner slurm has one node per rack and two 8-GPU jobs of 7.7 kW each; owner k8s has no jobs.
// Together they need 15.4 kW, more than half the row's budget: shared runs them at once, static halves cannot.
TEST(SplitSimulatorTest, SharingRunsWhatStaticHalvesCannotWhenTheOtherOwnerIsIdle) {
  const Topology t = Sized(SizingSystem::kH100, 32, 2, 2, 0, 72);
  ASSERT_EQ(t.racks().size(), 2u);
  std::vector<TraceJob> jobs(2);
  for (int i = 0; i < 2; ++i) {
    jobs[i].id = "j" + std::to_string(i);
    jobs[i].gpus = 8;
    jobs[i].duration = 100;
  }
  SplitOptions split;
  split.job_owner = {0, 0};
  split.horizon_s = 100;
  split.mode = SplitMode::kShared;
  const SplitResult shared = Split(t, jobs, split);
  split.mode = SplitMode::kStatic;
  const SplitResult halves = Split(t, jobs, split);
  ASSERT_EQ(shared.owners[0].placements.size(), 2u);
  ASSERT_EQ(halves.owners[0].placements.size(), 2u);
  EXPECT_EQ(shared.owners[0].placements[1].start, 0);
  EXPECT_EQ(halves.owners[0].placements[1].start, 100);  // waits for the first: its owner's half is full
  EXPECT_DOUBLE_EQ(shared.gpu_hours_by_horizon, 2 * 8 * 100 / 3600.0);
  EXPECT_DOUBLE_EQ(halves.gpu_hours_by_horizon, 8 * 100 / 3600.0);
  EXPECT_EQ(shared.overall.power_violation_kws, 0);
  EXPECT_EQ(halves.overall.power_violation_kws, 0);
}

// The same row. k8s runs an 8-GPU job (7.7 kW) from 0 to 100. slurm's head, 16 GPUs (15.4 kW, all of slurm's
// nodes), arrives at 1 and does not fit beside it: with nothing of slurm's running it must wait, not be rejected,
// and its reservation must keep slurm's own 1-GPU job (arriving at 2, running 1000 s) from taking one of its GPUs.
TEST(SplitSimulatorTest, AnOwnerBlockedOnlyByTheOthersDrawWaitsWithItsReservation) {
  const Topology t = Sized(SizingSystem::kH100, 32, 2, 2, 0, 72);
  std::vector<TraceJob> jobs(3);
  const int gpus[] = {8, 16, 1};
  const double submit[] = {0, 1, 2}, duration[] = {100, 100, 1000};
  for (int i = 0; i < 3; ++i) {
    jobs[i].id = "j" + std::to_string(i);
    jobs[i].gpus = gpus[i];
    jobs[i].submit = submit[i];
    jobs[i].duration = duration[i];
  }
  SplitOptions split;
  split.job_owner = {1, 0, 0};
  const SplitResult r = Split(t, jobs, split);
  EXPECT_EQ(r.overall.rejected, 0);
  ASSERT_EQ(r.owners[0].placements.size(), 2u);
  EXPECT_EQ(jobs[r.owners[0].placements[0].job].id, "j1");
  EXPECT_EQ(r.owners[0].placements[0].start, 100);
  EXPECT_EQ(r.owners[0].placements[1].start, 200);
  EXPECT_EQ(r.overall.power_violation_kws, 0);
}

TEST(SplitSimulatorTest, EveryJobRunsOnItsOwnersNodesOnly) {
  ForEachModeOnCappedH100([](const Topology&, const std::vector<TraceJob>& jobs, const SplitResult& r) {
    std::array<int, 2> jobs_of = {0, 0};
    for (int owner : r.job_owner) ++jobs_of[owner];
    for (int owner = 0; owner < 2; ++owner) {
      EXPECT_EQ(r.owners[owner].metrics.jobs, jobs_of[owner]);
      EXPECT_GT(r.owners[owner].placements.size(), 200u);
      for (const SimPlacement& p : r.owners[owner].placements) {
        EXPECT_EQ(r.job_owner[p.job], owner) << jobs[p.job].id;
        for (const NodeGpus& ng : p.nodes) ASSERT_EQ(r.node_owner[ng.node], owner) << jobs[p.job].id;
      }
    }
  });
}

TEST(SplitSimulatorTest, NodeSplitKeepsNvlinkDomainsWholeAndGivesBothOwnersEveryRow) {
  // HGX: every rack's nodes alternate. NVL72: whole racks alternate under each row.
  for (const Topology& t :
       {Sized(SizingSystem::kH100, 512, 4, 4, 0, 100), Sized(SizingSystem::kGb200Nvl72, 4608, 0, 8, 110, 80)}) {
    const std::vector<int> owner = SplitNodeOwners(t);
    for (const NvlinkDomain& d : t.domains())
      for (NodeId n : d.nodes) EXPECT_EQ(owner[n], owner[d.nodes.front()]);
    for (const PowerDomain& pd : t.power_domains()) {
      std::array<int, 2> gpus = {0, 0};
      for (RackId rack : pd.racks)
        for (NodeId n : t.racks()[rack].nodes) gpus[owner[n]] += t.nodes()[n].gpus;
      if (pd.racks.size() >= 2) {
        EXPECT_EQ(gpus[0], gpus[1]) << pd.name;
      }
    }
  }
  // HGX: the rack's k-th NVLink domain (node) goes to owner k % 2, so every rack feeds both owners.
  const Topology hgx = Sized(SizingSystem::kH100, 512, 4, 4, 0, 100);
  for (const Rack& rack : hgx.racks())
    for (size_t k = 0; k < rack.domains.size(); ++k)
      EXPECT_EQ(SplitNodeOwners(hgx)[hgx.domains()[rack.domains[k]].nodes.front()], static_cast<int>(k % 2));
  const Topology nvl = Sized(SizingSystem::kGb200Nvl72, 4608, 0, 8, 110, 80);
  for (const Rack& rack : nvl.racks()) {
    std::set<int> owners;
    for (NodeId n : rack.nodes) owners.insert(SplitNodeOwners(nvl)[n]);
    EXPECT_EQ(owners.size(), 1u) << rack.name;
  }
}

// Caps at full-load draw never bind, so the owners cannot affect each other: each must get exactly the
// placements it gets when the other owner has no jobs at all. Every policy but rackwise: its placer prefers racks
// with more power room left (weights.power_headroom), which the other owner's draw changes even when no cap binds,
// as it would on one real shared ledger.
TEST(SplitSimulatorTest, WhereCapsDoNotBindEachOwnerFaresAsAlone) {
  const Topology t = Sized(SizingSystem::kH100, 512, 4, 4, 0, 100);
  const std::vector<TraceJob> jobs = Trace(t.total_gpus(), 600, 1.5);
  for (SimPolicy policy : AllSimPolicies()) {
    if (policy == SimPolicy::kRackwise) continue;
    SCOPED_TRACE(SimPolicyName(policy));
    const SplitResult both = Split(t, jobs, Mode(SplitMode::kShared), policy);
    for (int owner = 0; owner < 2; ++owner) {
      SCOPED_TRACE(SplitOwnerName(owner));
      std::vector<TraceJob> own;
      for (size_t j = 0; j < jobs.size(); ++j)
        if (both.job_owner[j] == owner) own.push_back(jobs[j]);
      SplitOptions alone = Mode(SplitMode::kShared);
      alone.job_owner.assign(own.size(), owner);
      const SplitResult r = Split(t, own, alone, policy);
      const auto& a = r.owners[owner].placements;
      const auto& b = both.owners[owner].placements;
      ASSERT_EQ(a.size(), b.size());
      ASSERT_GT(a.size(), 200u);
      for (size_t i = 0; i < a.size(); ++i) {
        const std::string& id = own[a[i].job].id;
        ASSERT_EQ(id, jobs[b[i].job].id) << i;
        ASSERT_EQ(a[i].start, b[i].start) << id;
        ASSERT_EQ(a[i].end, b[i].end) << id;
        ASSERT_EQ(a[i].nodes.size(), b[i].nodes.size()) << id;
        for (size_t k = 0; k < a[i].nodes.size(); ++k) {
          ASSERT_EQ(a[i].nodes[k].node, b[i].nodes[k].node) << id;
          ASSERT_EQ(a[i].nodes[k].gpus, b[i].nodes[k].gpus) << id;
        }
      }
      EXPECT_DOUBLE_EQ(r.owners[owner].metrics.mean_wait_s, both.owners[owner].metrics.mean_wait_s);
    }
  }
}

TEST(SplitSimulatorTest, RefusesBadSplitsWithTheFieldNamed) {
  const Topology t = CappedH100();
  const std::vector<TraceJob> jobs = Trace(t.total_gpus(), 10, 1);
  SimOptions o;
  auto message = [&](SplitOptions s, SimOptions opt) {
    absl::StatusOr<SplitResult> r = SimulateSplit(t, jobs, opt, s);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(r.status().message());
  };
  EXPECT_NE(message(Mode(SplitMode::kStatic, 1), o).find("static_share"), std::string::npos);
  EXPECT_NE(message(Mode(SplitMode::kStatic, 0), o).find("static_share"), std::string::npos);
  SplitOptions s;
  s.job_owner = {0};
  EXPECT_NE(message(s, o).find("job_owner"), std::string::npos);
  s = SplitOptions{};
  s.node_owner.assign(t.nodes().size(), 0);
  EXPECT_NE(message(s, o).find("k8s has no GPUs"), std::string::npos);
  SimOptions telemetry;
  telemetry.telemetry = true;
  EXPECT_NE(message(SplitOptions{}, telemetry).find("telemetry"), std::string::npos);
  EXPECT_FALSE(ParseSplitMode("halves").ok());
}

}  // namespace
}  // namespace rackwise
