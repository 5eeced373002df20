// `rackwise simulate --split-owners`: see simulate_split.h. The replay is rackwise::SimulateSplit (the core);
// this file checks the flags, times the replays and formats.
#include "simulate_split.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "command.h"
#include "rackwise/split_simulator.h"

namespace rackwise::cli {
namespace {

struct SplitRun {
  SplitResult result;
  double seconds = 0;
};

}  // namespace

nlohmann::ordered_json QueueMetricsJson(const SimMetrics& m) {
  return {{"jobs", m.jobs},
          {"completed", m.completed},
          {"rejected", m.rejected},
          {"gpu_hours", m.gpu_hours},
          {"makespan_s", m.makespan_s},
          {"mean_wait_s", m.mean_wait_s},
          {"p95_wait_s", m.p95_wait_s},
          {"gpu_utilization", m.gpu_utilization}};
}

namespace {

nlohmann::ordered_json RunJson(const SplitRun& run) {
  const SplitResult& r = run.result;
  nlohmann::ordered_json j;
  j["mode"] = SplitModeName(r.mode);
  j["horizon_s"] = r.horizon_s;
  j["gpu_hours_by_horizon"] = r.gpu_hours_by_horizon;
  nlohmann::ordered_json owners = nlohmann::ordered_json::object();
  for (int o = 0; o < 2; ++o) {
    nlohmann::ordered_json owner = QueueMetricsJson(r.owners[o].metrics);
    owner["gpus"] = r.owners[o].gpus;
    owner["gpu_hours_by_horizon"] = r.owners[o].gpu_hours_by_horizon;
    owner["utilization_by_horizon"] = r.owners[o].utilization_by_horizon;
    owners[SplitOwnerName(o)] = owner;
  }
  j["owners"] = owners;
  nlohmann::ordered_json all = QueueMetricsJson(r.overall);
  all["power_violation_kws"] = r.overall.power_violation_kws;
  all["cap_excursions"] = r.overall.cap_excursions;
  all["peak_rack_kw"] = r.overall.peak_rack_kw;
  all["energy_mwh"] = r.overall.energy_mwh;
  j["overall"] = all;
  j["replay_s"] = run.seconds;
  return j;
}

// Shared over static, of what both measure; 0 when static did nothing.
double Ratio(double shared, double halves) { return halves > 0 ? shared / halves : 0; }

// One owner's figures (owner 0 or 1) or the whole cluster's (-1) in one mode.
struct Figures {
  const SimMetrics& metrics;
  double gpu_hours_by_horizon;
  double utilization_by_horizon;  // owners only
};

Figures FiguresOf(const SplitResult& r, int owner) {
  if (owner < 0) return {r.overall, r.gpu_hours_by_horizon, 0};
  const SplitOwnerResult& o = r.owners[owner];
  return {o.metrics, o.gpu_hours_by_horizon, o.utilization_by_horizon};
}

void PrintTable(const std::vector<SplitRun>& runs) {
  struct Row {
    const char* name;
    std::string (*fmt)(const Figures&);
    bool owners_only = false;
  };
  static const Row per_owner[] = {
      {"GPU-hours by horizon", [](const Figures& f) { return absl::StrFormat("%.0f", f.gpu_hours_by_horizon); }},
      {"utilisation by horizon (%)",
       [](const Figures& f) { return absl::StrFormat("%.1f", 100 * f.utilization_by_horizon); }, true},
      {"completed", [](const Figures& f) { return absl::StrFormat("%d/%d", f.metrics.completed, f.metrics.jobs); }},
      {"rejected (never fit)", [](const Figures& f) { return absl::StrFormat("%d", f.metrics.rejected); }},
      {"GPU-hours (all completed)", [](const Figures& f) { return absl::StrFormat("%.0f", f.metrics.gpu_hours); }},
      {"mean wait (min)", [](const Figures& f) { return absl::StrFormat("%.1f", f.metrics.mean_wait_s / 60); }},
      {"p95 wait (min)", [](const Figures& f) { return absl::StrFormat("%.1f", f.metrics.p95_wait_s / 60); }},
  };
  static const Row cluster[] = {
      {"makespan (h)", [](const Figures& f) { return absl::StrFormat("%.1f", f.metrics.makespan_s / 3600); }},
      {"GPU utilisation (%)",
       [](const Figures& f) { return absl::StrFormat("%.1f", 100 * f.metrics.gpu_utilization); }},
      {"power over cap (kW*s)",
       [](const Figures& f) { return absl::StrFormat("%.0f", f.metrics.power_violation_kws); }},
      {"cap excursions", [](const Figures& f) { return absl::StrFormat("%d", f.metrics.cap_excursions); }},
  };
  auto print = [&](const Row& row, int owner, const char* indent) {
    std::printf("%s%-*s", indent, 36 - static_cast<int>(std::string(indent).size()), row.name);
    for (const SplitRun& run : runs) std::printf(" %12s", row.fmt(FiguresOf(run.result, owner)).c_str());
    std::printf("\n");
  };
  std::printf("%-36s", "");
  for (const SplitRun& run : runs) std::printf(" %12s", SplitModeName(run.result.mode));
  std::printf("\n");
  for (int owner : {0, 1, -1}) {
    std::printf("%s\n", owner < 0 ? "total" : SplitOwnerName(owner));
    for (const Row& row : per_owner)
      if (!(row.owners_only && owner < 0)) print(row, owner, "  ");
  }
  for (const Row& row : cluster) print(row, -1, "");
  std::printf("%-36s", "replay (s)");
  for (const SplitRun& run : runs) std::printf(" %12.2f", run.seconds);
  std::printf("\n");
  if (runs.size() == 2) {
    const SplitResult &shared = runs[0].result, &halves = runs[1].result;
    std::printf("GPU-hours by horizon, shared / static: total %.3f, %s %.3f, %s %.3f\n",
                Ratio(shared.gpu_hours_by_horizon, halves.gpu_hours_by_horizon), SplitOwnerName(0),
                Ratio(shared.owners[0].gpu_hours_by_horizon, halves.owners[0].gpu_hours_by_horizon), SplitOwnerName(1),
                Ratio(shared.owners[1].gpu_hours_by_horizon, halves.owners[1].gpu_hours_by_horizon));
  }
}

}  // namespace

std::string CheckSplitFlags(const SplitFlags& split, const std::string& policy, bool telemetry,
                            const std::string& placements) {
  if (split.mode.empty()) {
    if (split.static_share >= 0) return "--static-share needs --split-owners static or compare";
    if (split.horizon_h >= 0) return "--split-horizon-h needs --split-owners";
    return "";
  }
  if (split.mode != "shared" && split.mode != "static" && split.mode != "compare")
    return "--split-owners: '" + split.mode + "' is not shared, static or compare";
  if (split.static_share >= 0 && split.mode == "shared")
    return "--static-share: only with --split-owners static or compare (shared has no shares)";
  if (split.static_share >= 0 && !(split.static_share > 0 && split.static_share < 1))
    return absl::StrFormat("--static-share: %g is not above 0 and below 1 (0.5: halves)", split.static_share);
  if (policy == "all") return "--split-owners: give one --policy, not all";
  if (telemetry) return "--split-owners: --telemetry is not modelled with two owners";
  if (!placements.empty() && split.mode == "compare")
    return "--placements: give --split-owners shared or static, not compare";
  return "";
}

int RunSplit(const Topology& topology, const std::vector<TraceJob>& jobs, const SimOptions& base,
             const SplitFlags& split, bool json, const std::string& placements) {
  std::vector<SplitMode> modes;
  if (split.mode != "static") modes.push_back(SplitMode::kShared);
  if (split.mode != "shared") modes.push_back(SplitMode::kStatic);
  double first_submit = 0;
  if (!jobs.empty())
    first_submit = std::min_element(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) {
                     return a.submit < b.submit;
                   })->submit;
  std::vector<SplitRun> runs;
  for (SplitMode mode : modes) {
    SplitOptions options;
    options.mode = mode;
    if (split.static_share >= 0) options.static_share = split.static_share;
    if (split.horizon_h >= 0) options.horizon_s = first_submit + split.horizon_h * 3600;
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<SplitResult> result = SimulateSplit(topology, jobs, base, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!result.ok()) {
      std::fprintf(stderr, "rackwise simulate: --split-owners %s: %s\n", SplitModeName(mode),
                   std::string(result.status().message()).c_str());
      return result.status().code() == absl::StatusCode::kInvalidArgument ? kExitInvalidInput : kExitInternal;
    }
    runs.push_back({std::move(*result), seconds});
  }
  if (!placements.empty()) {
    std::vector<SimPlacement> all;
    for (const SplitOwnerResult& o : runs[0].result.owners)
      all.insert(all.end(), o.placements.begin(), o.placements.end());
    std::stable_sort(all.begin(), all.end(),
                     [](const SimPlacement& a, const SimPlacement& b) { return a.start < b.start; });
    std::ofstream out(placements, std::ios::binary);
    for (const SimPlacement& p : all) out << PlacementJsonLine(topology, jobs, p) << '\n';
    out.close();
    if (!out) {
      std::fprintf(stderr, "rackwise simulate: cannot write %s\n", placements.c_str());
      return kExitInvalidInput;
    }
  }
  if (json) {
    nlohmann::ordered_json j;
    j["policy"] = SimPolicyName(base.policy);
    for (const SplitRun& run : runs) j[SplitModeName(run.result.mode)] = RunJson(run);
    if (runs.size() == 2)
      j["gpu_hours_by_horizon_ratio"] = Ratio(runs[0].result.gpu_hours_by_horizon, runs[1].result.gpu_hours_by_horizon);
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf(
      "cluster %s (%d GPUs), trace %zu jobs, policy %s, two owners (%s, %s), horizon %.1f h after the first "
      "submit\n",
      topology.cluster_name().c_str(), topology.total_gpus(), jobs.size(), SimPolicyName(base.policy),
      SplitOwnerName(0), SplitOwnerName(1), (runs[0].result.horizon_s - first_submit) / 3600);
  PrintTable(runs);
  return kExitOk;
}

}  // namespace rackwise::cli
