// `rackwise simulate --preemption`: see simulate_preemption.h. The replay is rackwise::SimulatePreemption (the
// core); this file times the replays and formats.
#include "simulate_preemption.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_format.h"
#include "command.h"
#include "rackwise/preemption_replay.h"

namespace rackwise::cli {
namespace {

struct PreemptionRun {
  PreemptionPolicy policy;
  PreemptionReplayMetrics metrics;
  double seconds = 0;
};

struct Row {
  const char* name;
  const char* json;
  double (*value)(const PreemptionReplayMetrics&);
  const char* format;
};

const Row kRows[] = {
    {"completed", "completed", [](const PreemptionReplayMetrics& m) { return double(m.completed); }, "%.0f"},
    {"rejected (never fit)", "rejected", [](const PreemptionReplayMetrics& m) { return double(m.rejected); }, "%.0f"},
    {"high-priority jobs", "high_priority_jobs",
     [](const PreemptionReplayMetrics& m) { return double(m.high_priority_jobs); }, "%.0f"},
    {"high-priority mean wait (min)", "high_mean_wait_min",
     [](const PreemptionReplayMetrics& m) { return m.high_mean_wait_s / 60; }, "%.1f"},
    {"high-priority p95 wait (min)", "high_p95_wait_min",
     [](const PreemptionReplayMetrics& m) { return m.high_p95_wait_s / 60; }, "%.1f"},
    {"other jobs mean wait (min)", "low_mean_wait_min",
     [](const PreemptionReplayMetrics& m) { return m.low_mean_wait_s / 60; }, "%.1f"},
    {"preemptions", "preemptions", [](const PreemptionReplayMetrics& m) { return double(m.preemptions); }, "%.0f"},
    {"jobs requeued", "victims", [](const PreemptionReplayMetrics& m) { return double(m.victims); }, "%.0f"},
    {"GPU-hours lost to preemption", "lost_gpu_hours",
     [](const PreemptionReplayMetrics& m) { return m.lost_gpu_hours; }, "%.1f"},
    {"preempting jobs in fewest domains (%)", "preempting_min_domain_pct",
     [](const PreemptionReplayMetrics& m) { return m.preempting_min_domain_pct; }, "%.1f"},
    {"preempting jobs: mean domains", "preempting_mean_domains",
     [](const PreemptionReplayMetrics& m) { return m.preempting_mean_domains; }, "%.2f"},
    {"preempting jobs: mean racks", "preempting_mean_racks",
     [](const PreemptionReplayMetrics& m) { return m.preempting_mean_racks; }, "%.2f"},
    {"power over cap (kW*s)", "power_violation_kws",
     [](const PreemptionReplayMetrics& m) { return m.power_violation_kws; }, "%.0f"},
    {"cap excursions", "cap_excursions", [](const PreemptionReplayMetrics& m) { return double(m.cap_excursions); },
     "%.0f"},
    {"makespan (h)", "makespan_h", [](const PreemptionReplayMetrics& m) { return m.makespan_s / 3600; }, "%.1f"},
};

// rackwise over the baseline, of what both measure; "-" when the baseline measured nothing.
std::string RatioText(double rackwise, double baseline) {
  return baseline > 0 ? absl::StrFormat("%.3f", rackwise / baseline) : std::string("-");
}

void PrintTable(const std::vector<PreemptionRun>& runs) {
  std::printf("%-40s %14s %14s %10s\n", "", PreemptionPolicyName(runs[0].policy), PreemptionPolicyName(runs[1].policy),
              "ratio");
  for (const Row& row : kRows) {
    const double a = row.value(runs[0].metrics), b = row.value(runs[1].metrics);
    std::printf("%-40s %14s %14s %10s\n", row.name, absl::StrFormat(row.format, a).c_str(),
                absl::StrFormat(row.format, b).c_str(), RatioText(a, b).c_str());
  }
  std::printf("%-40s %14.2f %14.2f\n", "replay (s)", runs[0].seconds, runs[1].seconds);
}

}  // namespace

int RunPreemptionReplay(const Topology& topology, const std::vector<TraceJob>& jobs, bool json) {
  std::vector<PreemptionRun> runs;
  for (PreemptionPolicy policy : {PreemptionPolicy::kRackwise, PreemptionPolicy::kPriorityOrder}) {
    PreemptionReplayOptions options;
    options.policy = policy;
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<PreemptionReplayResult> result = SimulatePreemption(topology, jobs, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!result.ok()) {
      std::fprintf(stderr, "rackwise simulate: --preemption %s: %s\n", PreemptionPolicyName(policy),
                   std::string(result.status().message()).c_str());
      return result.status().code() == absl::StatusCode::kInvalidArgument ? kExitInvalidInput : kExitInternal;
    }
    runs.push_back({policy, result->metrics, seconds});
  }
  if (json) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const PreemptionRun& run : runs) {
      nlohmann::ordered_json j;
      j["policy"] = PreemptionPolicyName(run.policy);
      for (const Row& row : kRows) j[row.json] = row.value(run.metrics);
      j["replay_s"] = run.seconds;
      all.push_back(j);
    }
    std::printf("%s\n", all.dump(2).c_str());
    return kExitOk;
  }
  std::printf(
      "cluster %s (%d GPUs), %zu jobs; preemption: rackwise (PlanPreemption) against priority-order "
      "(cons_tres: victims in priority order until the job fits)\n",
      topology.cluster_name().c_str(), topology.total_gpus(), jobs.size());
  PrintTable(runs);
  return kExitOk;
}

}  // namespace rackwise::cli
