// The steering replay's comparison table (BENCHMARKS.md): a capped GB200 NVL72 cluster and a capped HGX H100
// cluster, the same saturated workload for every mode, ratios against rackwise as it is (jobs count their
// declared watts) measured in the same run.
//
//   steering_bench [--hours H] [--jobs N] [--seed S] [--cluster gb200|h100|both]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "rackwise/steering_replay.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

struct Mode {
  SteeringMode mode;
  double oversubscribe_pct;
};

v1::ClusterDescription Capped(const std::string& name) {
  SyntheticClusterSpec spec;
  spec.name = name;
  if (name == "gb200") {
    // 8 NVL72 racks (118.8 kW each at full load, 27 kW idle) capped at 90 kW; rows of 4 racks at 340 kW.
    spec.blocks.push_back({.system = ReferenceSystem::kGb200Nvl72,
                           .racks = 8,
                           .nodes_per_rack = 18,
                           .rack_cap_kw = 90,
                           .racks_per_row = 4,
                           .row_cap_kw = 340});
  } else {
    // 16 racks of 4 HGX H100 (40.8 kW at full load, 10 kW idle) capped at 30 kW; rows of 4 racks at 110 kW.
    spec.blocks.push_back({.system = ReferenceSystem::kHgxH100,
                           .racks = 16,
                           .nodes_per_rack = 4,
                           .rack_cap_kw = 30,
                           .racks_per_row = 4,
                           .row_cap_kw = 110});
  }
  return BuildSyntheticCluster(spec);
}

int RunCluster(const std::string& name, double hours, int jobs, uint64_t seed) {
  const std::vector<Mode> modes = {
      {SteeringMode::kDeclared, 0},     {SteeringMode::kReclaim, 0}, {SteeringMode::kRequeueOnly, 20},
      {SteeringMode::kRequeueOnly, 30}, {SteeringMode::kSteer, 0},   {SteeringMode::kSteer, 10},
      {SteeringMode::kSteer, 20},       {SteeringMode::kSteer, 30},  {SteeringMode::kSteer, 40}};
  std::printf("\n%s: %d jobs, %.0f h, seed %llu\n\n", name.c_str(), jobs, hours, static_cast<unsigned long long>(seed));
  std::printf(
      "| mode | oversubscribe | GPU-hours | vs declared | GPU-h/MWh | vs declared | mean GPUs busy | "
      "held jobs | requeued | excursions | excursion s | longest s | kW·s over |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  double base_work = 0, base_eff = 0;
  for (const Mode& m : modes) {
    v1::ClusterDescription d = Capped(name);
    d.mutable_policy()->set_oversubscribe_pct(m.oversubscribe_pct);
    absl::StatusOr<Topology> t = Topology::Build(d);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", std::string(t.status().message()).c_str());
      return 1;
    }
    const std::vector<SteeringReplayJob> workload = GenerateSteeringWorkload(*t, jobs, seed);
    SteeringReplayOptions o;
    o.mode = m.mode;
    o.horizon_s = hours * 3600;
    absl::StatusOr<SteeringReplayReport> r = ReplaySteering(*t, workload, o);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
      return 1;
    }
    if (m.mode == SteeringMode::kDeclared) base_work = r->work_gpu_hours, base_eff = r->gpu_hours_per_mwh;
    std::printf("| %s | %.0f%% | %.0f | %.3f | %.1f | %.3f | %.0f | %.1f | %d | %d | %.0f | %.0f | %.0f |\n",
                SteeringModeName(m.mode), m.oversubscribe_pct, r->work_gpu_hours,
                base_work > 0 ? r->work_gpu_hours / base_work : 0, r->gpu_hours_per_mwh,
                base_eff > 0 ? r->gpu_hours_per_mwh / base_eff : 0, r->mean_running_gpus, r->mean_held_jobs,
                r->requeued, r->excursions, r->excursion_s, r->longest_excursion_s, r->excursion_kws);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace rackwise

int main(int argc, char** argv) {
  double hours = 12;
  int jobs = 400;
  unsigned long long seed = 1;
  std::string cluster = "both";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--hours")
      hours = std::atof(value.c_str());
    else if (flag == "--jobs")
      jobs = std::atoi(value.c_str());
    else if (flag == "--seed")
      seed = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--cluster")
      cluster = value;
    else {
      std::fprintf(stderr, "usage: steering_bench [--hours H] [--jobs N] [--seed S] [--cluster gb200|h100|both]\n");
      return 2;
    }
  }
  if (!(hours > 0) || jobs < 1 || (cluster != "gb200" && cluster != "h100" && cluster != "both")) {
    std::fprintf(stderr, "steering_bench: need --hours > 0, --jobs >= 1, --cluster gb200|h100|both\n");
    return 2;
  }
  std::printf("perf model: a GPU held at L below the W it wants runs (L/W)^0.3 as fast; telemetry every 15 s\n");
  for (const std::string c : {"gb200", "h100"})
    if (cluster == "both" || cluster == c)
      if (int rc = rackwise::RunCluster(c, hours, jobs, seed); rc != 0) return rc;
  return 0;
}
