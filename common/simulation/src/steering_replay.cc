// The steering replay: one-second steps, a telemetry round every interval. See steering_replay.h.
#include "rackwise/steering_replay.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <string>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "rackwise/ledger.h"
#include "rackwise/ledger_steering.h"
#include "rackwise/oversubscription.h"
#include "rackwise/placer.h"
#include "rackwise/telemetry.h"

namespace rackwise {
namespace {

struct Running {
  int job = 0;
  std::string id;
  std::vector<NodeGpus> nodes;
  Milliwatts declared = 0;  // per GPU: the GPUs' limit when nothing holds them back
  Milliwatts limit = 0;
  double start = 0;
  double progress = 0;  // seconds of work at full speed
  int64_t order = 0;    // start order
};

// Runs of seconds above one cap.
class ExcursionMeter {
 public:
  void Second(int scope, Milliwatts draw, Milliwatts cap, double now, SteeringReplayReport* report) {
    if (run_start_.size() <= static_cast<size_t>(scope)) run_start_.resize(scope + 1, -1);
    double& start = run_start_[scope];
    if (draw > cap) {
      report->excursion_kws += static_cast<double>(draw - cap) / 1e6;
      if (start < 0) {
        start = now;
        report->excursions++;
      }
    } else if (start >= 0) {
      Close(now - start, report);
      start = -1;
    }
  }
  void Finish(double now, SteeringReplayReport* report) {
    for (double& start : run_start_)
      if (start >= 0) Close(now - start, report), start = -1;
  }

 private:
  static void Close(double length, SteeringReplayReport* report) {
    report->excursion_s += length;
    report->longest_excursion_s = std::max(report->longest_excursion_s, length);
  }
  std::vector<double> run_start_;
};

class Replay {
 public:
  Replay(const Topology& t, const std::vector<SteeringReplayJob>& jobs, const SteeringReplayOptions& o)
      : t_(t), jobs_(jobs), o_(o), ledger_(t), attempts_(jobs.size(), 0) {
    settings_.enabled = o.mode != SteeringMode::kDeclared;
    settings_.interval_s = o.interval_s;
    settings_.stale_after_s = 4 * o.interval_s;
    settings_.reclaim_fraction = o.mode == SteeringMode::kReclaim ? o.reclaim_fraction : 0;
    settings_.on_overdraw = o.mode == SteeringMode::kSteer         ? OverdrawAction::kLowerLimits
                            : o.mode == SteeringMode::kRequeueOnly ? OverdrawAction::kRequeueNewest
                                                                   : OverdrawAction::kNone;
    for (const Rack& r : t.racks()) idle_ += r.idle;
    std::vector<int> order(jobs.size());
    for (size_t j = 0; j < jobs.size(); ++j) order[j] = static_cast<int>(j);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return jobs[a].submit_s < jobs[b].submit_s; });
    pending_.assign(order.begin(), order.end());
  }

  SteeringReplayReport Run() {
    const long long seconds = static_cast<long long>(o_.horizon_s);
    const long long every = std::max<long long>(1, std::llround(o_.interval_s));
    long long ticks = 0;
    for (long long s = 0; s < seconds; ++s) {
      const double now = static_cast<double>(s);
      if (s % every == 0) {
        Tick(now);
        ++ticks;
      }
      Second(now);
    }
    meter_.Finish(static_cast<double>(seconds), &report_);
    for (const Running& r : running_) report_.work_gpu_hours += jobs_[r.job].gpus * r.progress / 3600;
    report_.energy_mwh = energy_mws_ / 3600.0 / 1e9;
    report_.gpu_hours_per_mwh = report_.energy_mwh > 0 ? report_.work_gpu_hours / report_.energy_mwh : 0;
    report_.mean_running_gpus = seconds > 0 ? gpu_seconds_ / static_cast<double>(seconds) : 0;
    report_.mean_held_jobs = ticks > 0 ? held_sum_ / static_cast<double>(ticks) : 0;
    return report_;
  }

 private:
  // Per GPU: what the job's GPUs want at `now` (its profile's share of declared), and what they draw.
  Milliwatts Wanted(const Running& r, double now) const {
    const SteeringReplayJob& j = jobs_[r.job];
    if (j.profile.empty()) return r.declared;
    double age = now - r.start;
    if (j.profile_period_s > 0) age = std::fmod(age, j.profile_period_s);
    auto it = std::upper_bound(j.profile.begin(), j.profile.end(), std::make_pair(age, 2.0));
    const double share = it == j.profile.begin() ? j.profile.front().second : std::prev(it)->second;
    return static_cast<Milliwatts>(static_cast<double>(r.declared) * std::clamp(share, 0.0, 1.0));
  }
  Milliwatts Draws(const Running& r, double now) const { return std::min(r.limit, Wanted(r, now)); }

  void Tick(double now) {
    if (settings_.enabled) Measure(now);
    if (o_.mode == SteeringMode::kSteer) Steer(now);
    if (o_.mode == SteeringMode::kRequeueOnly) RequeueOverdrawn();
    int held = 0;
    for (const Running& r : running_) held += r.limit < r.declared;
    held_sum_ += held;
    Schedule(now);
  }

  // Every node's GPU watts this second, applied as a face's poll applies a Prometheus answer.
  void Measure(double now) {
    std::vector<double> node_watts(t_.nodes().size(), 0);
    for (const Running& r : running_) {
      const double w = MilliwattsToWatts(Draws(r, now));
      for (const NodeGpus& ng : r.nodes) node_watts[ng.node] += w * GpuCount(ng.gpus);
    }
    PowerReadings readings;
    readings.nodes_ok = true;
    for (NodeId n = 0; n < static_cast<NodeId>(t_.nodes().size()); ++n)
      readings.nodes.push_back({t_.nodes()[n].name, node_watts[n], 0});
    const MeasuredDraw measured = MeasureRacks(t_, settings_, readings);
    ApplyMeasuredDraw(measured, settings_, /*count_recent=*/false, &ledger_);
    state_ = measured.state;
  }

  void Steer(double now) {
    SteeringFacts facts;
    absl::flat_hash_map<std::string, size_t> index;
    for (size_t i = 0; i < running_.size(); ++i) {
      const Running& r = running_[i];
      index[r.id] = i;
      facts.limits[r.id] = r.limit;
      facts.demand[r.id] = Draws(r, now);  // what the node agent measures on the job's GPUs
      facts.declared[r.id] = r.declared;
      facts.started[r.id] = r.order;
    }
    LedgerSteering in;
    const SteeringPlan plan = PlanLedgerSteering(ledger_, facts, &in);
    for (size_t a = 0; a < in.allocations.size(); ++a) running_[index[in.allocations[a].id]].limit = plan.limits[a];
    std::vector<std::string> gone;
    for (int a : plan.requeue) gone.push_back(in.allocations[a].id);
    RequeueIds(gone);
  }

  void RequeueOverdrawn() {
    absl::flat_hash_map<std::string, int64_t> order;
    for (const Running& r : running_) order[r.id] = r.order;
    std::vector<std::string> gone;
    for (const Overdraw& o : FindOverdraws(ledger_)) {
      auto started = [&](const std::string& id) -> std::optional<int64_t> { return order.at(id); };
      for (std::string& id : PlanRequeueNewest(ledger_, o, started))
        if (std::find(gone.begin(), gone.end(), id) == gone.end()) gone.push_back(std::move(id));
    }
    RequeueIds(gone);
  }

  void RequeueIds(const std::vector<std::string>& ids) {
    for (const std::string& id : ids) {
      auto it = std::find_if(running_.begin(), running_.end(), [&](const Running& r) { return r.id == id; });
      if (it == running_.end()) continue;
      ledger_.Release(id);
      pending_.push_front(it->job);
      report_.requeued++;
      running_.erase(it);
    }
  }

  void Schedule(double now) {
    int tried = 0;
    for (auto it = pending_.begin(); it != pending_.end() && tried < o_.queue_depth;) {
      const int j = *it;
      if (jobs_[j].submit_s > now) break;
      ++tried;
      if (Start(j, now)) {
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }

  bool Start(int j, double now) {
    const SteeringReplayJob& job = jobs_[j];
    PlacementRequest r;
    r.id = absl::StrCat("job", j, ".", attempts_[j]);
    r.gpus = job.gpus;
    r.gpus_per_node = job.gpus_per_node;
    r.report_refusal = false;
    const bool oversubscribe = o_.mode == SteeringMode::kSteer || o_.mode == SteeringMode::kRequeueOnly;
    OversubscribedWatts count;
    if (oversubscribe) {
      TelemetrySettings steering = settings_;  // requeue-only counts jobs as steering would
      steering.on_overdraw = OverdrawAction::kLowerLimits;
      count = CountOversubscribed(t_, r, steering, state_);
    }
    absl::StatusOr<PlacementOutcome> out = Placer::Place(ledger_, WithOversubscription(r, count));
    if (!out.ok() || !std::holds_alternative<PlacementDecision>(*out)) return false;
    const PlacementDecision& d = std::get<PlacementDecision>(*out);
    if (!ledger_.Commit(d.ToAllocation(r.id)).ok()) return false;
    attempts_[j]++;
    Running run;
    run.job = j;
    run.id = r.id;
    run.nodes = d.nodes;
    run.declared = count.applied ? WattsToMilliwatts(count.declared_watts_per_gpu) : d.per_gpu;
    run.limit = run.declared;
    run.start = now;
    run.order = next_order_++;
    running_.push_back(std::move(run));
    report_.started++;
    return true;
  }

  // One second of the hardware: draws, the caps' meter, energy, progress, completions.
  void Second(double now) {
    std::vector<Milliwatts> rack(t_.racks().size(), 0);
    for (RackId r = 0; r < static_cast<RackId>(rack.size()); ++r) rack[r] = t_.racks()[r].idle;
    Milliwatts total = idle_;
    long long gpus = 0;
    for (Running& run : running_) {
      const Milliwatts wanted = Wanted(run, now), draws = std::min(run.limit, wanted);
      for (const NodeGpus& ng : run.nodes) rack[t_.nodes()[ng.node].rack] += draws * GpuCount(ng.gpus);
      total += draws * jobs_[run.job].gpus;
      gpus += jobs_[run.job].gpus;
      run.progress += draws >= wanted || wanted <= 0
                          ? 1.0
                          : std::pow(static_cast<double>(draws) / static_cast<double>(wanted), o_.perf_exponent);
    }
    std::vector<Milliwatts> domain(t_.power_domains().size(), 0);
    for (RackId r = 0; r < static_cast<RackId>(rack.size()); ++r) {
      meter_.Second(r, rack[r], ledger_.rack_cap(r), now, &report_);
      for (PowerDomainId p : t_.racks()[r].power_chain) domain[p] += rack[r];
    }
    for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(domain.size()); ++p)
      meter_.Second(static_cast<int>(rack.size()) + p, domain[p], ledger_.power_domain_cap(p), now, &report_);
    energy_mws_ += static_cast<double>(total);
    gpu_seconds_ += static_cast<double>(gpus);
    for (auto it = running_.begin(); it != running_.end();) {
      if (it->progress >= jobs_[it->job].duration_s) {
        report_.work_gpu_hours += jobs_[it->job].gpus * jobs_[it->job].duration_s / 3600;
        report_.completed++;
        ledger_.Release(it->id);
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
  }

  const Topology& t_;
  const std::vector<SteeringReplayJob>& jobs_;
  const SteeringReplayOptions o_;
  Ledger ledger_;
  TelemetrySettings settings_;
  TelemetryState state_ = TelemetryState::kOff;
  std::deque<int> pending_;
  std::vector<int> attempts_;
  std::vector<Running> running_;
  ExcursionMeter meter_;
  SteeringReplayReport report_;
  Milliwatts idle_ = 0;
  int64_t next_order_ = 0;
  double energy_mws_ = 0;  // milliwatt-seconds
  double gpu_seconds_ = 0;
  double held_sum_ = 0;
};

}  // namespace

const char* SteeringModeName(SteeringMode mode) {
  switch (mode) {
    case SteeringMode::kDeclared: return "declared";
    case SteeringMode::kReclaim: return "reclaim";
    case SteeringMode::kRequeueOnly: return "requeue-only";
    case SteeringMode::kSteer: return "steer";
  }
  return "declared";
}

absl::StatusOr<SteeringReplayReport> ReplaySteering(const Topology& topology,
                                                    const std::vector<SteeringReplayJob>& jobs,
                                                    const SteeringReplayOptions& options) {
  if (!(options.interval_s >= 1) || !(options.horizon_s > 0) || !(options.perf_exponent >= 0) ||
      !(options.reclaim_fraction >= 0 && options.reclaim_fraction <= 0.5) || options.queue_depth < 1)
    return absl::InvalidArgumentError(
        "steering replay: need interval_s >= 1, horizon_s > 0, perf_exponent >= 0, a reclaim fraction "
        "in 0..0.5, queue_depth >= 1");
  for (const SteeringReplayJob& j : jobs)
    if (j.gpus < 1 || !(j.duration_s > 0))
      return absl::InvalidArgumentError("steering replay: every job needs gpus >= 1 and duration_s > 0");
  return Replay(topology, jobs, options).Run();
}

}  // namespace rackwise
