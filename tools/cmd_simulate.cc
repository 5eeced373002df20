// `rackwise simulate`: replay a job trace against a cluster description under one placement policy (or all of
// them side by side) and report utilisation, waits, NVLink locality, rail alignment, power over the caps and
// GPU-hours per MWh; optionally every placement as JSONL. The replay itself is rackwise::Simulate (the core);
// this file reads the files, times the replay (jobs per second) and formats.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "command.h"
#include "rackwise/cluster_description.h"
#include "rackwise/simulator.h"
#include "rackwise/telemetry.h"
#include "rackwise/topology.h"
#include "rackwise/trace.h"
#include "rackwise/trace_fit.h"
#include "simulate_preemption.h"
#include "simulate_split.h"
#include "trace_fit_format.h"

namespace rackwise::cli {
namespace {

struct Run {
  SimPolicy policy;
  SimMetrics metrics;
  double seconds = 0;
  bool telemetry = false;
  double reclaim_fraction = 0;
};

nlohmann::ordered_json ToJson(const Run& r) {
  const SimMetrics& m = r.metrics;
  nlohmann::ordered_json j;
  j["policy"] = SimPolicyName(r.policy);
  j.update(QueueMetricsJson(m));
  j["min_domain_pct"] = m.min_domain_pct;
  j["mean_domains_per_job"] = m.mean_domains_per_job;
  j["rail_aligned_pct"] = m.rail_aligned_pct;
  j["power_violation_kws"] = m.power_violation_kws;
  j["peak_rack_kw"] = m.peak_rack_kw;
  j["gpu_hours_per_mwh"] = m.gpu_hours_per_mwh;
  j["gpu_utilization_arrivals"] = m.gpu_utilization_arrivals;
  j["goodput"] = m.goodput;
  j["power_ceiling"] = m.power_ceiling;
  j["min_domain_pct_local"] = m.min_domain_pct_local;
  j["rack_violation_kws"] = m.rack_violation_kws;
  j["domain_violation_kws"] = m.domain_violation_kws;
  j["cap_excursions"] = m.cap_excursions;
  j["telemetry"] = r.telemetry;
  j["reclaim_pct"] = r.telemetry ? 100 * r.reclaim_fraction : 0.0;
  j["energy_mwh"] = m.energy_mwh;
  j["replay_s"] = r.seconds;
  j["jobs_per_s"] = r.seconds > 0 ? m.jobs / r.seconds : 0.0;
  return j;
}

void PrintTable(const std::vector<Run>& runs, bool slowdown) {
  struct Row {
    const char* name;
    std::string (*fmt)(const Run&);
    bool slowdown_only = false;  // without a slowdown it would repeat the row above
  };
  static const Row rows[] = {
      {"jobs", [](const Run& r) { return absl::StrFormat("%d", r.metrics.jobs); }},
      {"completed", [](const Run& r) { return absl::StrFormat("%d", r.metrics.completed); }},
      {"rejected (never fit)", [](const Run& r) { return absl::StrFormat("%d", r.metrics.rejected); }},
      {"makespan (h)", [](const Run& r) { return absl::StrFormat("%.1f", r.metrics.makespan_s / 3600); }},
      {"mean wait (min)", [](const Run& r) { return absl::StrFormat("%.1f", r.metrics.mean_wait_s / 60); }},
      {"p95 wait (min)", [](const Run& r) { return absl::StrFormat("%.1f", r.metrics.p95_wait_s / 60); }},
      {"GPU utilisation (%)", [](const Run& r) { return absl::StrFormat("%.1f", 100 * r.metrics.gpu_utilization); }},
      {"  work done (%)", [](const Run& r) { return absl::StrFormat("%.1f", 100 * r.metrics.goodput); }, true},
      {"  while arriving (%)",
       [](const Run& r) { return absl::StrFormat("%.1f", 100 * r.metrics.gpu_utilization_arrivals); }},
      {"power ceiling (%)", [](const Run& r) { return absl::StrFormat("%.1f", 100 * r.metrics.power_ceiling); }},
      {"  utilisation / ceiling (%)",
       [](const Run& r) {
         return absl::StrFormat(
             "%.1f", r.metrics.power_ceiling > 0 ? 100 * r.metrics.gpu_utilization / r.metrics.power_ceiling : 0);
       }},
      {"  work / ceiling (%)",
       [](const Run& r) {
         return absl::StrFormat("%.1f",
                                r.metrics.power_ceiling > 0 ? 100 * r.metrics.goodput / r.metrics.power_ceiling : 0);
       },
       true},
      {"jobs in min domains (%)", [](const Run& r) { return absl::StrFormat("%.2f", r.metrics.min_domain_pct); }},
      {"  wanting locality (%)", [](const Run& r) { return absl::StrFormat("%.2f", r.metrics.min_domain_pct_local); }},
      {"domains per job", [](const Run& r) { return absl::StrFormat("%.2f", r.metrics.mean_domains_per_job); }},
      {"rail aligned (%)", [](const Run& r) { return absl::StrFormat("%.1f", r.metrics.rail_aligned_pct); }},
      {"power over cap (kW*s)", [](const Run& r) { return absl::StrFormat("%.0f", r.metrics.power_violation_kws); }},
      {"  racks (kW*s)", [](const Run& r) { return absl::StrFormat("%.0f", r.metrics.rack_violation_kws); }},
      {"  power domains (kW*s)", [](const Run& r) { return absl::StrFormat("%.0f", r.metrics.domain_violation_kws); }},
      {"cap excursions", [](const Run& r) { return absl::StrFormat("%d", r.metrics.cap_excursions); }},
      {"peak rack (kW)", [](const Run& r) { return absl::StrFormat("%.1f", r.metrics.peak_rack_kw); }},
      {"GPU-hours", [](const Run& r) { return absl::StrFormat("%.0f", r.metrics.gpu_hours); }},
      {"energy (MWh)", [](const Run& r) { return absl::StrFormat("%.1f", r.metrics.energy_mwh); }},
      {"GPU-hours per MWh", [](const Run& r) { return absl::StrFormat("%.1f", r.metrics.gpu_hours_per_mwh); }},
      {"replay (s)", [](const Run& r) { return absl::StrFormat("%.2f", r.seconds); }},
      {"jobs per second",
       [](const Run& r) { return absl::StrFormat("%.0f", r.seconds > 0 ? r.metrics.jobs / r.seconds : 0); }},
  };
  std::printf("%-28s", "");
  for (const Run& r : runs) std::printf(" %16s", SimPolicyName(r.policy));
  std::printf("\n");
  for (const Row& row : rows) {
    if (row.slowdown_only && !slowdown) continue;
    std::printf("%-28s", row.name);
    for (const Run& r : runs) std::printf(" %16s", row.fmt(r).c_str());
    std::printf("\n");
  }
}

std::string PlacementsPath(const std::string& path, SimPolicy policy, bool several) {
  if (!several) return path;
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return path + "." + SimPolicyName(policy);
  }
  return path.substr(0, dot) + "." + SimPolicyName(policy) + path.substr(dot);
}

// Replays the trace once per policy (`base` with the policy set) and writes the placements files; an exit code.
int RunPolicies(const Topology& topology, const std::vector<TraceJob>& jobs, SimOptions base,
                const std::vector<SimPolicy>& policies, const std::string& placements, std::vector<Run>* runs) {
  for (SimPolicy policy : policies) {
    base.policy = policy;
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<SimResult> result = Simulate(topology, jobs, base);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!result.ok()) {
      std::fprintf(stderr, "rackwise simulate: %s: %s\n", SimPolicyName(policy),
                   std::string(result.status().message()).c_str());
      return result.status().code() == absl::StatusCode::kInvalidArgument ? kExitInvalidInput : kExitInternal;
    }
    if (!placements.empty()) {
      const std::string path = PlacementsPath(placements, policy, policies.size() > 1);
      std::ofstream out(path, std::ios::binary);
      for (const SimPlacement& p : result->placements) out << PlacementJsonLine(topology, jobs, p) << '\n';
      out.close();
      if (!out) {
        std::fprintf(stderr, "rackwise simulate: cannot write %s\n", path.c_str());
        return kExitInvalidInput;
      }
    }
    runs->push_back({policy, result->metrics, seconds, base.telemetry, base.reclaim_fraction});
  }
  return kExitOk;
}

// Everything the command line sets. Negative preferred_wait, spread_cost and reclaim_pct mean "not given".
struct SimulateFlags {
  std::string cluster_path = DefaultClusterPath(), trace_path, policy_name = "rackwise", placements;
  bool json = false, no_backfill = false, telemetry = false;
  double reclaim_pct = -1;
  int depth = 500;
  double slowdown = 0;
  double preferred_wait = -1;
  double spread_cost = -1;
  SplitFlags split;
  bool preemption = false;
};

void AddSimulateFlags(CLI::App& app, SimulateFlags* f) {
  app.add_option("--cluster", f->cluster_path, "cluster description (default: the built-in demo)");
  app.add_option("--trace", f->trace_path, "trace CSV: " + std::string(kTraceHeader))->required();
  app.add_option("--policy", f->policy_name,
                 "rackwise | first-fit | spread | tree-bestfit | static-cap | capped-first-fit | all");
  app.add_flag("--json", f->json, "print JSON");
  app.add_option("--placements", f->placements,
                 "write every placement as JSONL (with --policy all: one file per policy, FILE.<policy>.jsonl)");
  app.add_option("--preferred-wait-s", f->preferred_wait,
                 "the most seconds a preferred job waits for its fewest NVLink domains (overrides the "
                 "description's policy.preferred_wait_s; 0: never wait)")
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--spread-cost-fraction", f->spread_cost,
                 "what a spread start is taken to cost a preferred job, as a fraction of its time limit, 0..1 "
                 "(overrides the description's policy.spread_cost_fraction; 0: never wait)")
      ->check(CLI::Range(0.0, kMaxSpreadCostFraction));
  app.add_flag("--no-backfill", f->no_backfill, "plain FIFO");
  app.add_option("--backfill-depth", f->depth, "queued jobs tried per backfill pass (500)");
  app.add_option("--spread-slowdown", f->slowdown,
                 "a job outside its fewest NVLink domains runs this much longer, 0..10 (0.2 = 20%; default 0)")
      ->check(CLI::Range(0.0, 10.0));
  app.add_flag("--telemetry", f->telemetry,
               "replay the trace's measured_watts_per_gpu as fresh telemetry before each decision: placements count "
               "max(estimate, measured) per rack and power domain");
  app.add_option("--reclaim-pct", f->reclaim_pct,
                 "with --telemetry: share of (estimate - measured) placements may use, 0..50 (default: the "
                 "description's telemetry.reclaim_pct, else 0)")
      ->check(CLI::Range(0.0, 50.0));
  app.add_option("--split-owners", f->split.mode,
                 "shared | static | compare: the trace split between two schedulers (slurm, k8s) on shared racks, "
                 "with one power ledger, with static shares of every budget, or both and the GPU-hours ratio");
  app.add_option("--static-share", f->split.static_share,
                 "with --split-owners static|compare: slurm's share of every rack and power domain budget above "
                 "idle, above 0 and below 1 (default 0.5; k8s has the rest)");
  app.add_option("--split-horizon-h", f->split.horizon_h,
                 "with --split-owners: count GPU-hours of jobs completed this many hours after the first submit "
                 "(default: at the last submit)")
      ->check(CLI::Range(0.0, 1e7));
  app.add_flag("--preemption", f->preemption,
               "replay the trace's priority column with preemption: rackwise's victims (fewest domains, caps, least "
               "work lost) against priority-order (cons_tres), side by side with the ratios");
}

// --policy as the list of policies to replay ("all": every one, side by side); nullopt (said) when unknown.
std::optional<std::vector<SimPolicy>> ParsePolicies(const std::string& name) {
  if (name == "all") return AllSimPolicies();
  absl::StatusOr<SimPolicy> p = ParseSimPolicy(name);
  if (!p.ok()) {
    std::fprintf(stderr, "rackwise simulate: --policy: %s\n", std::string(p.status().message()).c_str());
    return std::nullopt;
  }
  return std::vector<SimPolicy>{*p};
}

// Prints why a file did not load: its diagnostics (FILE:LINE: message), else the status alone.
void PrintLoadError(const Diagnostics& diags, const absl::Status& status) {
  for (const Diagnostic& d : diags) std::fprintf(stderr, "%s\n", d.ToString().c_str());
  if (diags.empty()) std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
}

// The cluster and the trace to replay, as loaded from the flags.
struct SimulateInputs {
  v1::ClusterDescription description;
  std::optional<Topology> topology;
  std::vector<TraceJob> jobs;
};

// Loads the description (with --preferred-wait-s and --spread-cost-fraction applied before it is compiled) and the
// trace; false when either is invalid, with the reasons on stderr.
bool LoadInputs(const SimulateFlags& flags, SimulateInputs* in) {
  Diagnostics diags;
  absl::StatusOr<v1::ClusterDescription> description = LoadClusterDescription(flags.cluster_path, &diags);
  if (!description.ok()) {
    PrintLoadError(diags, description.status());
    return false;
  }
  in->description = std::move(*description);
  if (flags.preferred_wait >= 0) in->description.mutable_policy()->set_preferred_wait_s(flags.preferred_wait);
  if (flags.spread_cost >= 0) in->description.mutable_policy()->set_spread_cost_fraction(flags.spread_cost);
  absl::StatusOr<Topology> topology = Topology::Build(in->description);
  if (!topology.ok()) {
    std::fprintf(stderr, "%s: %s\n", flags.cluster_path.c_str(), std::string(topology.status().message()).c_str());
    return false;
  }
  in->topology = std::move(*topology);
  diags.clear();
  absl::StatusOr<std::vector<TraceJob>> jobs = LoadTrace(flags.trace_path, &diags);
  if (!jobs.ok()) {
    PrintLoadError(diags, jobs.status());
    return false;
  }
  in->jobs = std::move(*jobs);
  return true;
}

// The replay settings shared by every policy; the reclaim share defaults to the description's.
SimOptions BaseSimOptions(const SimulateFlags& flags, const v1::ClusterDescription& description) {
  SimOptions base;
  base.backfill = !flags.no_backfill;
  base.backfill_depth = flags.depth;
  base.spread_slowdown = flags.slowdown;
  base.record_placements = !flags.placements.empty();
  base.telemetry = flags.telemetry;
  base.reclaim_fraction = flags.reclaim_pct >= 0 ? flags.reclaim_pct / 100
                                                 : TelemetrySettings::FromDescription(description).reclaim_fraction;
  return base;
}

// The runs as JSON (one object, or an array for several policies) or as a table under a header.
void PrintReport(const SimulateFlags& flags, const SimulateInputs& in, const SimOptions& base,
                 const std::vector<Run>& runs, const TraceFit& fit) {
  auto to_json = [&](const Run& r) {
    nlohmann::ordered_json j = ToJson(r);
    if (fit.misfit_jobs > 0) j["trace_misfits"] = TraceMisfitsJson(fit);
    return j;
  };
  if (flags.json) {
    if (runs.size() == 1) {
      std::printf("%s\n", to_json(runs[0]).dump(2).c_str());
    } else {
      nlohmann::ordered_json all = nlohmann::ordered_json::array();
      for (const Run& r : runs) all.push_back(to_json(r));
      std::printf("%s\n", all.dump(2).c_str());
    }
    return;
  }
  std::printf("cluster %s (%d GPUs), trace %s (%zu jobs)\n", in.topology->cluster_name().c_str(),
              in.topology->total_gpus(), flags.trace_path.c_str(), in.jobs.size());
  if (flags.slowdown > 0)
    std::printf("a job outside its fewest NVLink domains runs %g%% longer\n", 100 * flags.slowdown);
  if (flags.telemetry)
    std::printf("telemetry: measured draw replayed before each decision, reclaim_pct %g\n",
                100 * base.reclaim_fraction);
  PrintTable(runs, flags.slowdown > 0);
}

int RunSimulate(int argc, char** argv) {
  CLI::App app{"Replay a job trace (FIFO + EASY backfill) under a placement policy", "simulate"};
  SimulateFlags flags;
  AddSimulateFlags(app, &flags);
  if (std::optional<int> rc = ParseCommandFlags(app, argc, argv)) return *rc;
  if (flags.reclaim_pct >= 0 && !flags.telemetry) {
    std::fprintf(stderr, "rackwise simulate: --reclaim-pct needs --telemetry\n");
    return kExitUsage;
  }
  if (const std::string why = CheckSplitFlags(flags.split, flags.policy_name, flags.telemetry, flags.placements);
      !why.empty()) {
    std::fprintf(stderr, "rackwise simulate: %s\n", why.c_str());
    return kExitUsage;
  }
  if (flags.preemption && (!flags.split.mode.empty() || flags.telemetry || !flags.placements.empty())) {
    std::fprintf(stderr, "rackwise simulate: --preemption: not with --split-owners, --telemetry or --placements\n");
    return kExitUsage;
  }
  std::optional<std::vector<SimPolicy>> policies = ParsePolicies(flags.policy_name);
  if (!policies) return kExitUsage;
  SimulateInputs in;
  if (!LoadInputs(flags, &in)) return kExitInvalidInput;
  if (flags.preemption) return RunPreemptionReplay(*in.topology, in.jobs, flags.json);
  SimOptions base = BaseSimOptions(flags, in.description);
  if (!flags.split.mode.empty()) {
    base.policy = policies->front();
    return RunSplit(*in.topology, in.jobs, base, flags.split, flags.json, flags.placements);
  }
  std::vector<Run> runs;
  if (int rc = RunPolicies(*in.topology, in.jobs, base, *policies, flags.placements, &runs); rc != kExitOk) return rc;
  // A trace made for another cluster (GPUs per node, sizes it can never hold) is said so, not only counted.
  const TraceFit fit = CheckTraceFits(*in.topology, in.jobs);
  WarnTraceMisfits(fit, "rackwise simulate", flags.cluster_path);
  PrintReport(flags, in, base, runs, fit);
  return kExitOk;
}

}  // namespace

RACKWISE_REGISTER_COMMAND(simulate, "simulate", "replay a job trace under a placement policy and compare policies",
                          RunSimulate);

}  // namespace rackwise::cli
