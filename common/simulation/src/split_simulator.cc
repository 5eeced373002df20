// Two schedulers on shared racks: two sim::Replay lanes over one event timeline. See rackwise/split_simulator.h.
#include "rackwise/split_simulator.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "rackwise/static_share.h"
#include "simulator_draw.h"
#include "simulator_meter.h"
#include "simulator_policies.h"
#include "simulator_replay.h"

namespace rackwise {
namespace {

// The whole cluster as the hardware sees it: every owner's allocations in one ledger under the described caps,
// and the meter of its real draw. For a policy that keeps to the caps the commit enforces them: a refusal means
// the owners together passed a cap, which the caps each owner is given must prevent.
class ClusterMeter : public sim::LaneObserver {
 public:
  ClusterMeter(const Topology& t, CommitMode mode) : ledger_(t), real_(t), meter_(ledger_, real_), mode_(mode) {}

  absl::Status Started(const Allocation& a, Milliwatts measured_per_gpu) override {
    if (absl::Status s = ledger_.Commit(a, mode_); !s.ok()) {
      return absl::InternalError(
          absl::StrCat("the owners together overran the cluster with ", a.id, ": ", s.message()));
    }
    real_.Add(ledger_, a, measured_per_gpu, +1);
    meter_.Changed(RacksOf(a), GpusOf(a));
    return absl::OkStatus();
  }
  void Finished(const Allocation& a, Milliwatts measured_per_gpu) override {
    real_.Add(ledger_, a, measured_per_gpu, -1);
    ledger_.Release(a.id);
    meter_.Changed(RacksOf(a), -GpusOf(a));
  }

  const Ledger& ledger() const { return ledger_; }
  sim::Meter& meter() { return meter_; }

 private:
  std::vector<RackId> RacksOf(const Allocation& a) const {
    std::vector<RackId> racks;
    for (const NodeGpus& ng : a.nodes) racks.push_back(ledger_.topology().nodes()[ng.node].rack);
    std::sort(racks.begin(), racks.end());
    racks.erase(std::unique(racks.begin(), racks.end()), racks.end());
    return racks;
  }
  static int GpusOf(const Allocation& a) {
    int gpus = 0;
    for (const NodeGpus& ng : a.nodes) gpus += GpuCount(ng.gpus);
    return gpus;
  }

  Ledger ledger_;
  sim::RealDraw real_;
  sim::Meter meter_;
  CommitMode mode_;
};

// Caps per rack and per power domain for one owner.
struct Caps {
  std::vector<Milliwatts> rack, power_domain;
};

// Owner `owner`'s static caps (static_share.h). `share` applies to the budgets both owners have nodes under; a budget
// only one owner's nodes draw from (a whole NVL72 rack) is all that owner's, as no static split would strand half of
// it.
Caps StaticCaps(const Topology& t, const std::vector<int>& node_owner, int owner, double share) {
  const double reserve = t.policy().power_reserve_fraction;
  std::vector<std::array<bool, 2>> rack_has(t.racks().size(), {false, false});
  std::vector<std::array<bool, 2>> pd_has(t.power_domains().size(), {false, false});
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    const RackId r = t.nodes()[n].rack;
    rack_has[r][node_owner[n]] = true;
    for (PowerDomainId p : t.racks()[r].power_chain) pd_has[p][node_owner[n]] = true;
  }
  const auto share_of = [&](const std::array<bool, 2>& has) {
    return has[0] && has[1] ? share : has[owner] ? 1.0 : 0.0;
  };
  Caps caps;
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    const Rack& rack = t.racks()[r];
    caps.rack.push_back(StaticShareCap(rack.cap, rack.idle, share_of(rack_has[r]), reserve));
  }
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p) {
    const PowerDomain& pd = t.power_domains()[p];
    caps.power_domain.push_back(StaticShareCap(pd.cap, pd.idle, share_of(pd_has[p]), reserve));
  }
  return caps;
}

// Shared: the described caps less what the other owner's jobs draw (counted, above idle: the whole cluster's
// draw less this owner's, both of which include idle once), with its usable share rounded up.
Caps SharedCaps(const Topology& t, const Ledger& cluster, const Ledger& own) {
  const double keep = 1 - t.policy().power_reserve_fraction;
  auto cap = [keep](Milliwatts described, Milliwatts other) {
    return described - static_cast<Milliwatts>(std::ceil(static_cast<double>(other) / keep));
  };
  Caps caps;
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r)
    caps.rack.push_back(cap(t.racks()[r].cap, cluster.counted_rack_draw(r) - own.counted_rack_draw(r)));
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p)
    caps.power_domain.push_back(
        cap(t.power_domains()[p].cap, cluster.counted_power_domain_draw(p) - own.counted_power_domain_draw(p)));
  return caps;
}

absl::Status CheckSplit(const Topology& t, const std::vector<TraceJob>& jobs, const SimOptions& options,
                        const SplitOptions& split, const std::vector<int>& node_owner,
                        const std::vector<int>& job_owner) {
  if (absl::Status s = sim::CheckReplayInputs(t, jobs, options); !s.ok()) return s;
  if (options.telemetry) return absl::InvalidArgumentError("telemetry: not modelled with two owners");
  if (!(split.static_share > 0 && split.static_share < 1))
    return absl::InvalidArgumentError("static_share: must be above 0 and below 1 (0.5: halves)");
  if (node_owner.size() != t.nodes().size())
    return absl::InvalidArgumentError(
        absl::StrCat("node_owner: ", node_owner.size(), " entries for ", t.nodes().size(), " nodes"));
  if (job_owner.size() != jobs.size())
    return absl::InvalidArgumentError(
        absl::StrCat("job_owner: ", job_owner.size(), " entries for ", jobs.size(), " jobs"));
  const auto not_owner = [](int o) { return o != 0 && o != 1; };
  if (std::any_of(node_owner.begin(), node_owner.end(), not_owner) ||
      std::any_of(job_owner.begin(), job_owner.end(), not_owner))
    return absl::InvalidArgumentError("node_owner, job_owner: every entry must be 0 or 1");
  for (int o = 0; o < 2; ++o) {
    int gpus = 0;
    for (NodeId n = 0; n < static_cast<NodeId>(node_owner.size()); ++n)
      if (node_owner[n] == o) gpus += t.nodes()[n].gpus;
    if (gpus == 0) return absl::InvalidArgumentError(absl::StrCat("owner ", SplitOwnerName(o), " has no GPUs"));
  }
  return absl::OkStatus();
}

// A lane's meter measures against the caps the lane was given, not the hardware's: the whole cluster's are in
// SplitResult::overall.
SimMetrics WithoutPower(SimMetrics m) {
  m.power_violation_kws = m.rack_violation_kws = m.domain_violation_kws = 0;
  m.cap_excursions = 0;
  m.peak_rack_kw = m.energy_mwh = m.gpu_hours_per_mwh = 0;
  return m;
}

// One owner's figures by the horizon, from its placements.
void ByHorizon(const std::vector<TraceJob>& jobs, double first_submit, double horizon, SplitOwnerResult* owner) {
  double busy = 0;
  for (const SimPlacement& p : owner->placements) {
    const int gpus = jobs[p.job].gpus;
    if (p.end <= horizon) owner->gpu_hours_by_horizon += gpus * jobs[p.job].duration / 3600.0;
    busy += gpus * std::max(0.0, std::min(p.end, horizon) - p.start);
  }
  if (horizon > first_submit && owner->gpus > 0)
    owner->utilization_by_horizon = busy / (owner->gpus * (horizon - first_submit));
}

// Runs both lanes over one timeline, the owner whose oldest queued job came first scheduling first at each instant.
absl::Status RunLanes(const Topology& t, SplitMode mode, ClusterMeter* cluster, std::array<sim::Replay*, 2> lanes,
                      double now) {
  while (!lanes[0]->Done() || !lanes[1]->Done()) {
    const double next = std::min(lanes[0]->NextEvent(), lanes[1]->NextEvent());
    if (next != std::numeric_limits<double>::infinity()) now = std::max(now, next);
    cluster->meter().Advance(now);
    for (sim::Replay* lane : lanes) lane->Advance(now);
    const int first = lanes[1]->OldestQueued() < lanes[0]->OldestQueued() ? 1 : 0;
    for (int o : {first, 1 - first}) {
      if (mode == SplitMode::kShared) {
        const Caps caps = SharedCaps(t, cluster->ledger(), lanes[o]->ledger());
        lanes[o]->SetCaps(caps.rack, caps.power_domain);
      }
      if (absl::Status s = lanes[o]->Schedule(now); !s.ok()) return s;
    }
  }
  for (sim::Replay* lane : lanes) lane->Close(now);
  return absl::OkStatus();
}

// The whole cluster's metrics from the owners' and the cluster meter's.
SimMetrics Overall(const Topology& t, const std::vector<TraceJob>& jobs, const SplitResult& r, double first_submit,
                   const std::array<double, 2>& busy, ClusterMeter& cluster) {
  SimMetrics m;
  std::vector<double> waits;
  double last_end = first_submit;
  for (const SplitOwnerResult& o : r.owners) {
    m.jobs += o.metrics.jobs;
    m.completed += o.metrics.completed;
    m.rejected += o.metrics.rejected;
    m.gpu_hours += o.metrics.gpu_hours;
    m.placement_attempts += o.metrics.placement_attempts;
    for (const SimPlacement& p : o.placements) {
      waits.push_back(p.start - jobs[p.job].submit);
      last_end = std::max(last_end, p.end);
    }
  }
  sim::MeanAndP95(std::move(waits), &m.mean_wait_s, &m.p95_wait_s);
  m.makespan_s = last_end - first_submit;
  if (m.makespan_s > 0) {
    m.gpu_utilization = (busy[0] + busy[1]) / (t.total_gpus() * m.makespan_s);
    m.goodput = m.gpu_hours * 3600 / (t.total_gpus() * m.makespan_s);
  }
  m.power_ceiling = SimPowerCeiling(t, jobs) / t.total_gpus();
  sim::AddPowerMetrics(cluster.meter(), &m);
  return m;
}

}  // namespace

absl::StatusOr<SplitMode> ParseSplitMode(std::string_view name) {
  if (name == "shared") return SplitMode::kShared;
  if (name == "static") return SplitMode::kStatic;
  return absl::InvalidArgumentError(absl::StrCat("unknown split mode '", std::string(name), "' (shared, static)"));
}

const char* SplitModeName(SplitMode mode) { return mode == SplitMode::kShared ? "shared" : "static"; }

const char* SplitOwnerName(int owner) { return owner == 0 ? "slurm" : "k8s"; }

std::vector<int> SplitNodeOwners(const Topology& t) {
  std::vector<int> owner(t.nodes().size(), 0);
  absl::flat_hash_map<PowerDomainId, int> whole_racks;  // per lowest power domain: single-domain racks so far
  for (const Rack& rack : t.racks()) {
    if (rack.domains.size() >= 2) {
      for (size_t k = 0; k < rack.domains.size(); ++k)
        for (NodeId n : t.domains()[rack.domains[k]].nodes) owner[n] = static_cast<int>(k % 2);
      continue;
    }
    const int o = whole_racks[rack.power_domain]++ % 2;
    for (NodeId n : rack.nodes) owner[n] = o;
  }
  return owner;
}

std::vector<int> SplitJobOwners(const std::vector<TraceJob>& jobs) {
  std::vector<int> owner;
  owner.reserve(jobs.size());
  for (const TraceJob& j : jobs) owner.push_back(static_cast<int>(sim::Mix(sim::Fnv1a(j.id)) & 1));
  return owner;
}

absl::StatusOr<SplitResult> SimulateSplit(const Topology& t, const std::vector<TraceJob>& jobs,
                                          const SimOptions& options, const SplitOptions& split) {
  SplitResult out;
  out.mode = split.mode;
  out.node_owner = split.node_owner.empty() ? SplitNodeOwners(t) : split.node_owner;
  out.job_owner = split.job_owner.empty() ? SplitJobOwners(jobs) : split.job_owner;
  if (absl::Status s = CheckSplit(t, jobs, options, split, out.node_owner, out.job_owner); !s.ok()) return s;
  SimOptions lane_options = options;
  lane_options.record_placements = true;  // the figures by the horizon are read from the placements
  std::array<sim::LaneSetup, 2> setups;
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
    setups[1 - out.node_owner[n]].foreign_nodes.push_back(n);
  for (sim::LaneSetup& setup : setups) setup.jobs.emplace();
  for (int j = 0; j < static_cast<int>(jobs.size()); ++j) setups[out.job_owner[j]].jobs->push_back(j);
  // Every owner runs the same policy: the cluster ledger enforces the caps when the policy promises to keep them.
  const CommitMode mode = sim::MakePolicy(options.policy, t, options)->commit_mode();
  ClusterMeter cluster(t, mode);
  std::array<std::unique_ptr<sim::Replay>, 2> lanes;
  for (int o = 0; o < 2; ++o) {
    setups[o].observer = &cluster;
    lanes[o] = std::make_unique<sim::Replay>(t, jobs, lane_options, std::move(setups[o]));
    if (split.mode == SplitMode::kStatic) {
      const Caps caps = StaticCaps(t, out.node_owner, o, o == 0 ? split.static_share : 1 - split.static_share);
      lanes[o]->SetCaps(caps.rack, caps.power_domain);
      lanes[o]->SetCeiling(caps.rack, caps.power_domain);
    }
  }
  double first_submit = std::numeric_limits<double>::infinity(), last_submit = 0;
  for (const TraceJob& j : jobs) {
    first_submit = std::min(first_submit, j.submit);
    last_submit = std::max(last_submit, j.submit);
  }
  if (jobs.empty()) first_submit = 0;
  cluster.meter().Advance(first_submit);
  if (absl::Status s = RunLanes(t, split.mode, &cluster, {lanes[0].get(), lanes[1].get()}, first_submit); !s.ok())
    return s;
  out.horizon_s = split.horizon_s.value_or(last_submit);
  std::array<double, 2> busy{};
  for (int o = 0; o < 2; ++o) {
    SplitOwnerResult& owner = out.owners[o];
    SimResult r = lanes[o]->Result();
    owner.metrics = WithoutPower(r.metrics);
    owner.placements = std::move(r.placements);
    for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
      if (out.node_owner[n] == o) owner.gpus += t.nodes()[n].gpus;
    ByHorizon(jobs, first_submit, out.horizon_s, &owner);
    out.gpu_hours_by_horizon += owner.gpu_hours_by_horizon;
    busy[o] = lanes[o]->busy_gpu_seconds();
  }
  out.overall = Overall(t, jobs, out, first_submit, busy, cluster);
  if (!options.record_placements)
    for (SplitOwnerResult& owner : out.owners) owner.placements.clear();
  return out;
}

}  // namespace rackwise
