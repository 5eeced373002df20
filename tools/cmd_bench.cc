// `rackwise bench`: the time of one placement decision for a job on a cluster as it stands, repeated, so that a
// user can check on their own description and state what a face pays per decision (a fit or a refusal alike).
// In-process and wall clock: loading and telemetry are done once, before the first timed decision.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "command.h"
#include "decision_format.h"
#include "placement_session.h"
#include "rackwise/cluster_state.h"
#include "rackwise/placer.h"
#include "rackwise/refusal_memo.h"
#include "telemetry_session.h"

namespace rackwise::cli {
namespace {

struct Timings {
  double median_us = 0, p99_us = 0, max_us = 0, mean_us = 0;
};

// Sorts `us` (one entry per decision) into the figures reported.
Timings Summarise(std::vector<double> us) {
  Timings t;
  if (us.empty()) return t;
  std::sort(us.begin(), us.end());
  t.median_us = us[us.size() / 2];
  t.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  t.max_us = us.back();
  double sum = 0;
  for (double v : us) sum += v;
  t.mean_us = sum / static_cast<double>(us.size());
  return t;
}

struct FillFlags {
  double percent = 0;  // occupancy to reach before timing (0: the state as loaded)
  unsigned seed = 1;
  int job_gpus = 0;        // every filling job's size (0: the mix below)
  std::string save_state;  // where to write the filled state (a state file for --state)
};

// Fills the ledger towards `percent` of its GPUs with a seeded stream of mixed jobs (mostly small, a few of one
// or two NVL72 racks) placed by the placer itself, so that free space is as fragmented as a real queue leaves
// it. Under binding caps the target may be out of reach: it stops after a run of refusals. Returns the
// allocations made.
int Fill(Ledger* ledger, const FillFlags& fill) {
  static const int kSizes[] = {1, 2, 4, 4, 8, 8, 16, 32, 64, 72, 144};
  const Topology& t = ledger->topology();
  std::mt19937_64 rng(fill.seed);
  long long free = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) free += ledger->free_gpu_count(n);
  const long long target_free = t.total_gpus() - static_cast<long long>(t.total_gpus() * fill.percent / 100.0);
  int made = 0, refused_in_a_row = 0;
  for (int i = 0; free > target_free && refused_in_a_row < 1000; ++i) {
    PlacementRequest r;
    r.id = "fill-" + std::to_string(i);
    const int size = fill.job_gpus > 0 ? fill.job_gpus : kSizes[rng() % std::size(kSizes)];
    r.gpus = static_cast<int>(std::min<long long>(size, free - target_free));
    r.locality = Locality::kNone;  // fills fragments as a busy cluster has them
    r.report_refusal = false;      // only "does it fit" matters here
    absl::StatusOr<PlacementOutcome> out = Placer::Place(*ledger, r);
    const auto* d = out.ok() ? std::get_if<PlacementDecision>(&*out) : nullptr;
    if (d == nullptr || !ledger->Commit(d->ToAllocation(r.id)).ok()) {
      ++refused_in_a_row;
      continue;
    }
    refused_in_a_row = 0;
    free -= r.gpus;
    ++made;
  }
  return made;
}

// One line for people: what the decision was, then the figures.
void PrintText(const Session& session, const PlacementOutcome& outcome, int repeat, const Timings& t,
               const nlohmann::json& facts) {
  const Topology& topology = *session.topology;
  std::printf("state: %zu allocations, %.1f%% of GPUs in use (loaded in %.1f ms)\n", session.ledger->allocation_count(),
              facts["occupancy_pct"].get<double>(), facts["load_ms"].get<double>());
  if (const auto* d = std::get_if<PlacementDecision>(&outcome)) {
    std::printf("fit: %zu nodes, %d NVLink domains, %zu racks\n", d->nodes.size(), d->domains, d->racks.size());
  } else {
    std::printf("refused: %s\n", std::get<PlacementRefusal>(outcome).Message().c_str());
  }
  std::printf("%d GPUs, %zu nodes: %d decisions, median %.2f us, p99 %.2f us, max %.2f us, mean %.2f us\n",
              topology.total_gpus(), topology.nodes().size(), repeat, t.median_us, t.p99_us, t.max_us, t.mean_us);
}

void AddFillFlags(CLI::App* app, FillFlags* fill, int* repeat) {
  app->add_option("--repeat", *repeat, "decisions to time")->check(CLI::Range(1, 10'000'000));
  app->add_option("--fill", fill->percent, "first fill the cluster to this percentage of its GPUs")
      ->check(CLI::Range(0.0, 100.0));
  app->add_option("--fill-seed", fill->seed, "seed of the filling jobs");
  app->add_option("--fill-job-gpus", fill->job_gpus, "GPUs of every filling job (default: a mix of 1 to 144)")
      ->check(CLI::Range(0, 1 << 20));
  app->add_option("--save-state", fill->save_state, "write the state after filling (a file for --state)");
}

// Loads, fills and saves; returns the session or the exit code. Prints the load time, which is what a face
// pays on restart for a state file.
std::variant<Session, int> Prepare(const SessionFlags& flags, const FillFlags& fill, nlohmann::json* facts) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<Session> session = LoadSession(flags);
  if (!session) return kExitInvalidInput;
  (*facts)["load_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (fill.percent > 0) (*facts)["filled_allocations"] = Fill(session->ledger.get(), fill);
  if (!fill.save_state.empty()) {
    std::ofstream out(fill.save_state);
    out << ClusterStateToYaml(CaptureClusterState(*session->ledger));
    if (!out.good()) {
      std::fprintf(stderr, "rackwise bench: cannot write %s\n", fill.save_state.c_str());
      return kExitInvalidInput;
    }
  }
  long long free = 0;
  const Topology& t = *session->topology;
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) free += session->ledger->free_gpu_count(n);
  (*facts)["gpus"] = t.total_gpus();
  (*facts)["nodes"] = t.nodes().size();
  (*facts)["allocations"] = session->ledger->allocation_count();
  (*facts)["occupancy_pct"] = 100.0 - 100.0 * static_cast<double>(free) / std::max(1, t.total_gpus());
  return *std::move(session);
}

// A change that leaves the state as it was: the first node drained (or undrained) and given back its health.
void TouchLedger(Ledger* ledger) {
  const NodeHealth health = ledger->node_health(0);
  ledger->SetNodeHealth(0, health == NodeHealth::kDrained ? NodeHealth::kUp : NodeHealth::kDrained);
  ledger->SetNodeHealth(0, health);
}

int RunBench(int argc, char** argv) {
  CLI::App app{"Times one placement decision (a fit or a refusal), repeated, on a cluster and state.",
               "rackwise bench"};
  SessionFlags flags;
  JobFlags job;
  FillFlags fill;
  int repeat = 1000;
  bool as_pending = false;
  bool after_change = false;
  AddSessionFlags(&app, &flags);
  AddJobFlags(&app, &job);
  AddFillFlags(&app, &fill, &repeat);
  app.add_flag("--as-pending", as_pending,
               "ask as the Slurm face asks for a pending job: through its refusal memo, so that a refusal asked "
               "again with nothing changed is answered from memory");
  app.add_flag("--after-change", after_change,
               "before each decision, untimed, drain the first node and give it back its health: each decision then "
               "finds the ledger changed, as the first one after a commit or release does (what the ledger rebuilds "
               "when first asked is paid in every decision)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  nlohmann::json json;
  std::variant<Session, int> prepared = Prepare(flags, fill, &json);
  if (const int* code = std::get_if<int>(&prepared)) return *code;
  Session& session = std::get<Session>(prepared);
  std::optional<PlacementRequest> request = BuildRequest(job, *session.topology);
  if (!request) return kExitUsage;
  MeasureOnce(session.description, flags.no_telemetry, session.ledger.get());
  absl::StatusOr<PlacementOutcome> first = Placer::Place(*session.ledger, *request);
  if (!first.ok()) {
    std::fprintf(stderr, "rackwise bench: %s\n", std::string(first.status().message()).c_str());
    return kExitUsage;
  }
  std::vector<double> us;
  us.reserve(repeat);
  RefusalMemo memo;
  for (int i = 0; i < repeat; ++i) {
    if (after_change) TouchLedger(session.ledger.get());
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<PlacementOutcome> out =
        as_pending ? memo.Place(*session.ledger, *request) : Placer::Place(*session.ledger, *request);
    const auto stop = std::chrono::steady_clock::now();
    if (!out.ok()) return kExitInternal;  // the same request was accepted a moment ago: a bug
    us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
  }
  const Timings t = Summarise(std::move(us));
  if (flags.json) {
    const bool fit = std::holds_alternative<PlacementDecision>(*first);
    json["outcome"] = fit ? "fit" : "refused";
    json["repeat"] = repeat;
    json["as_pending"] = as_pending;
    json["after_change"] = after_change;
    json["median_us"] = t.median_us;
    json["p99_us"] = t.p99_us;
    json["max_us"] = t.max_us;
    json["mean_us"] = t.mean_us;
    json["decision"] = fit ? DecisionToJson(*session.topology, std::get<PlacementDecision>(*first))
                           : RefusalToJson(std::get<PlacementRefusal>(*first));
    std::printf("%s\n", json.dump().c_str());
  } else {
    PrintText(session, *first, repeat, t, json);
  }
  return kExitOk;
}

}  // namespace

RACKWISE_REGISTER_COMMAND(bench, "bench", "time one placement decision (a fit or a refusal), repeated", RunBench);

}  // namespace rackwise::cli
