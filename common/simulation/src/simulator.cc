// The trace replay's results and entry point. The replay itself is sim::Replay (simulator_replay.h).
#include "rackwise/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "simulator_replay.h"

namespace rackwise {
namespace sim {

SimResult Replay::Result() const {
  SimResult out;
  SimMetrics& m = out.metrics;
  m.jobs = static_cast<int>(order_.size());
  m.rejected = rejected_;
  m.completed = static_cast<int>(placements_.size());
  m.placement_attempts = attempts_;
  double first_submit = std::numeric_limits<double>::infinity(), last_end = 0;
  for (int j : order_) first_submit = std::min(first_submit, jobs_[j].submit);
  std::vector<double> waits;
  long long domains = 0;
  int in_min = 0, multi = 0, aligned = 0, local = 0, local_in_min = 0;
  for (const SimPlacement& p : placements_) {
    const TraceJob& j = jobs_[p.job];
    last_end = std::max(last_end, p.end);
    waits.push_back(p.start - j.submit);
    domains += p.domains;
    if (p.domains <= p.min_domains) ++in_min;
    if (j.locality != Locality::kNone) {
      ++local;
      if (p.domains <= p.min_domains) ++local_in_min;
    }
    if (p.nodes.size() > 1) {
      ++multi;
      if (p.rail_aligned) ++aligned;
    }
    m.gpu_hours += j.gpus * j.duration / 3600.0;
  }
  if (!placements_.empty()) {
    m.makespan_s = last_end - first_submit;
    MeanAndP95(std::move(waits), &m.mean_wait_s, &m.p95_wait_s);
    m.min_domain_pct = 100.0 * in_min / placements_.size();
    m.mean_domains_per_job = static_cast<double>(domains) / placements_.size();
    m.min_domain_pct_local = local ? 100.0 * local_in_min / local : 100.0;
  }
  m.rail_aligned_pct = multi ? 100.0 * aligned / multi : 100.0;
  const double gpus = static_cast<double>(lane_gpus_);
  if (m.makespan_s > 0 && gpus > 0) {
    m.gpu_utilization = meter_.busy_gpu_seconds() / (gpus * m.makespan_s);
    m.goodput = m.gpu_hours * 3600 / (gpus * m.makespan_s);
  }
  // The arrivals span starts at the first submit, where the meter starts (in a lane of several, the meter may
  // start earlier, at another lane's first event, with nothing of this lane's running).
  const double span = last_submit_ - first_submit;
  if (arrivals_done_ && span > 0 && gpus > 0) m.gpu_utilization_arrivals = busy_at_last_submit_ / (gpus * span);
  // The ceiling is the whole cluster's: a lane's share of it depends on the other lane.
  if (whole_cluster_ && gpus > 0) m.power_ceiling = SimPowerCeiling(t_, jobs_) / gpus;
  AddPowerMetrics(meter_, &m);
  if (options_.record_placements) {
    out.placements = placements_;
    out.reservations = reservations_;
    std::stable_sort(out.placements.begin(), out.placements.end(),
                     [](const SimPlacement& a, const SimPlacement& b) { return a.start < b.start; });
  }
  return out;
}

void MeanAndP95(std::vector<double> values, double* mean, double* p95) {
  *mean = *p95 = 0;
  if (values.empty()) return;
  double sum = 0;
  for (double v : values) sum += v;
  *mean = sum / values.size();
  std::sort(values.begin(), values.end());
  const size_t idx = static_cast<size_t>(std::ceil(0.95 * values.size())) - 1;
  *p95 = values[std::min(idx, values.size() - 1)];
}

absl::Status CheckReplayInputs(const Topology& topology, const std::vector<TraceJob>& jobs, const SimOptions& options) {
  if (topology.total_gpus() == 0) return absl::InvalidArgumentError("the cluster has no GPUs");
  if (options.backfill_depth < 0) return absl::InvalidArgumentError("backfill_depth: must be >= 0");
  if (!(options.spread_slowdown >= 0 && options.spread_slowdown <= 10)) {
    return absl::InvalidArgumentError("spread_slowdown: must be 0..10 (0.2 = 20% longer)");
  }
  if (!(options.reclaim_fraction >= 0 && options.reclaim_fraction <= 0.5)) {
    return absl::InvalidArgumentError("reclaim_fraction: must be 0..0.5 (reclaim_pct 0..50)");
  }
  for (const TraceJob& j : jobs) {
    if (j.gpus < 1 || !(j.duration > 0) || !(j.submit >= 0) || j.gpus_per_node < 0 ||
        (j.gpus_per_node > 0 && j.gpus % j.gpus_per_node != 0) ||
        !(j.measured_watts_per_gpu >= 0 && j.measured_watts_per_gpu <= kMaxWattsPerGpu)) {
      return absl::InvalidArgumentError(
          absl::StrCat("job ", j.id, ": malformed (gpus, duration, submit, gpus_per_node or measured_watts_per_gpu)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace sim

absl::StatusOr<SimResult> Simulate(const Topology& topology, const std::vector<TraceJob>& jobs,
                                   const SimOptions& options) {
  if (absl::Status s = sim::CheckReplayInputs(topology, jobs, options); !s.ok()) return s;
  auto replay = std::make_unique<sim::Replay>(topology, jobs, options, sim::LaneSetup{});
  if (absl::Status s = replay->Run(); !s.ok()) return s;
  return replay->Result();
}

}  // namespace rackwise
