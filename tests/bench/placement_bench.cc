// One placement decision on large clusters at 70% occupancy with mixed job sizes, against the linear-scan
// baseline measured in the same run. See BENCHMARKS.md for the figures and how to run this.
//
// Clusters: 64 GB200 NVL72 racks (4,608 GPUs), 1,000 NVL72 racks (72,000 GPUs), 9,000 HGX H100 nodes
// (72,000 GPUs, 4 per rack), and 1,821 NVL72 racks (131,112 GPUs) with caps that do not bind and with caps that
// do (racks 110 kW, rows of 8 at 80% of their racks' caps). Occupancy is reached by placing a seeded stream of
// mixed jobs with the placer itself and committing them, so the free space is as fragmented as a real queue
// leaves it; where the caps stop the fill short of 70%, at the point where jobs keep being refused.
#include <benchmark/benchmark.h>

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

#include "linear_scan_placer.h"
#include "rackwise/placer.h"
#include "rackwise/preemption.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise::bench {
namespace {

struct Fixture {
  std::unique_ptr<Topology> topology;
  std::unique_ptr<Ledger> ledger;
  std::vector<PlacementRequest> probes;  // the requests each iteration cycles through
  double state_mib = 0;
};

// Job sizes as a share of jobs: many small, some node-sized, a few large (a mixed research/training queue).
PlacementRequest MixedJob(std::mt19937_64& rng, bool nvl72, int serial) {
  static const int kNvlSizes[] = {1, 2, 4, 4, 8, 8, 16, 32, 64, 72, 144};
  static const int kHgxSizes[] = {1, 2, 4, 8, 8, 8, 16, 16, 32, 64, 128};
  PlacementRequest r;
  r.id = "fill" + std::to_string(serial);
  const int size = (nvl72 ? kNvlSizes : kHgxSizes)[std::uniform_int_distribution<int>(0, 10)(rng)];
  r.gpus = size;
  if (!nvl72 && size >= 8) r.gpus_per_node = 8;
  return r;
}

Fixture* Build(const SyntheticClusterSpec& spec, bool nvl72) {
  auto* f = new Fixture;
  struct mallinfo2 before = mallinfo2();
  auto topo = Topology::Build(BuildSyntheticCluster(spec));
  if (!topo.ok()) std::abort();
  f->topology = std::make_unique<Topology>(*std::move(topo));
  f->ledger = std::make_unique<Ledger>(*f->topology);
  std::mt19937_64 rng(42);
  const long long target = f->topology->total_gpus() * 70LL / 100;
  long long used = 0;
  constexpr int kRefusalsInARow = 500;  // the caps are full: what is left is not worth filling
  for (int i = 0, refused = 0; used < target && refused < kRefusalsInARow && i < 10'000'000; ++i) {
    PlacementRequest r = MixedJob(rng, nvl72, i);
    auto out = Placer::Place(*f->ledger, r);
    if (!out.ok()) std::abort();
    const auto* d = std::get_if<PlacementDecision>(&*out);
    if (d && f->ledger->Commit(d->ToAllocation(r.id)).ok()) {
      used += r.gpus;
      refused = 0;
    } else {
      ++refused;
    }
  }
  struct mallinfo2 after = mallinfo2();
  f->state_mib = static_cast<double>(after.uordblks - before.uordblks) / (1 << 20);
  for (int i = 0; i < 64; ++i) f->probes.push_back(MixedJob(rng, nvl72, 1'000'000 + i));
  return f;
}

SyntheticClusterSpec Nvl72Racks(int racks) {
  SyntheticClusterSpec spec;
  spec.name = "nvl72";
  // Rows of 8 racks; caps at full load (they do not bind), 4 racks per scalable unit.
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, racks, 18, 0, 4, 8, 0});
  return spec;
}

// As `rackwise size --system gb200-nvl72 --rack-cap-kw 110 --row-cap-pct 80` does: racks capped below their
// 118.8 kW at full load, rows of 8 at 80% of their racks' caps, so both bind.
SyntheticClusterSpec CappedNvl72Racks(int racks) {
  SyntheticClusterSpec spec;
  spec.name = "nvl72-capped";
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, racks, 18, 110, 4, 8, 8 * 110 * 0.8});
  return spec;
}

SyntheticClusterSpec HgxNodes(int nodes) {
  SyntheticClusterSpec spec;
  spec.name = "hgx";
  spec.blocks.push_back({ReferenceSystem::kHgxH100, nodes / 4, 4, 0, 8, 8, 0});
  return spec;
}

constexpr int kFixtures = 5;

Fixture& Get(int which) {
  static Fixture* fixtures[kFixtures] = {};
  if (fixtures[which] == nullptr) {
    switch (which) {
      case 0: fixtures[0] = Build(Nvl72Racks(64), true); break;
      case 1: fixtures[1] = Build(Nvl72Racks(1000), true); break;
      case 2: fixtures[2] = Build(HgxNodes(9000), false); break;
      case 3: fixtures[3] = Build(Nvl72Racks(1821), true); break;
      default: fixtures[4] = Build(CappedNvl72Racks(1821), true); break;
    }
  }
  return *fixtures[which];
}

void Report(benchmark::State& state, const Fixture& f) {
  state.counters["gpus"] = f.topology->total_gpus();
  state.counters["occupancy_pct"] = 100.0 - 100.0 * [&] {
    long long free = 0;
    for (NodeId n = 0; n < static_cast<NodeId>(f.topology->nodes().size()); ++n) free += f.ledger->free_gpu_count(n);
    return static_cast<double>(free);
  }() / f.topology->total_gpus();
  state.counters["state_MiB"] = f.state_mib;
}

// Times every decision, so that the median and the 99th percentile are reported, not only the mean.
template <typename PlaceFn>
void RunDecisions(benchmark::State& state, int which, PlaceFn place) {
  Fixture& f = Get(which);
  std::vector<double> ns;
  ns.reserve(1 << 16);
  size_t i = 0, placed = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const bool ok = place(f, f.probes[i++ % f.probes.size()]);
    const auto stop = std::chrono::steady_clock::now();
    placed += ok;
    if (ns.size() < (1u << 20)) ns.push_back(std::chrono::duration<double, std::nano>(stop - start).count());
  }
  Report(state, f);
  std::sort(ns.begin(), ns.end());
  if (!ns.empty()) {
    state.counters["median_us"] = ns[ns.size() / 2] / 1000.0;
    state.counters["p99_us"] = ns[ns.size() * 99 / 100] / 1000.0;
  }
  state.counters["placed_pct"] = 100.0 * static_cast<double>(placed) / static_cast<double>(state.iterations());
}

bool PlaceWithRackwise(Fixture& f, const PlacementRequest& r) {
  auto out = Placer::Place(*f.ledger, r);
  benchmark::DoNotOptimize(out);
  return out.ok() && std::holds_alternative<PlacementDecision>(*out);
}

bool PlaceWithLinearScanBestFit(Fixture& f, const PlacementRequest& r) {
  auto out = LinearScanBestFit(*f.ledger, r);
  benchmark::DoNotOptimize(out);
  return out.has_value();
}

bool PlaceWithLinearScanFirstFit(Fixture& f, const PlacementRequest& r) {
  auto out = LinearScanFirstFit(*f.ledger, r);
  benchmark::DoNotOptimize(out);
  return out.has_value();
}

// PlanPreemption on the fixture filled up with 4-GPU jobs until they are refused (every GPU held, or every cap
// full), for a 72-GPU `required` job, with every running job a candidate (lost hours and priority from its id).
// The fill is done once, outside the loop; each iteration is one whole decision. `measured`: every rack carries a
// power reading equal to its estimate (telemetry), where each trial costs a copy of the ledger (preemption.h).
void RunPreemption(benchmark::State& state, int which, bool measured) {
  Fixture& f = Get(which);
  static std::unique_ptr<Ledger> full[kFixtures], read[kFixtures];
  static std::vector<PreemptionCandidate> candidates[kFixtures];
  if (!full[which]) {
    full[which] = std::make_unique<Ledger>(*f.ledger);
    for (int i = 0, refused = 0; refused < 500; ++i) {
      PlacementRequest r;
      r.id = "top" + std::to_string(i);
      r.gpus = 4;
      auto out = Placer::Place(*full[which], r);
      const auto* d = out.ok() ? std::get_if<PlacementDecision>(&*out) : nullptr;
      refused = d && full[which]->Commit(d->ToAllocation(r.id)).ok() ? 0 : refused + 1;
    }
    for (const Allocation* a : full[which]->Allocations()) {
      const size_t h = std::hash<std::string>()(a->id);
      candidates[which].push_back({a->id, static_cast<int64_t>(h % 100), a->gpu_count() * (1.0 + h % 97)});
    }
    read[which] = std::make_unique<Ledger>(*full[which]);
    std::vector<std::optional<Milliwatts>> readings;
    for (RackId rack = 0; rack < static_cast<RackId>(f.topology->racks().size()); ++rack)
      readings.push_back(full[which]->rack_draw(rack));
    read[which]->SetMeasuredDraw(readings, 0.2);
  }
  const Ledger& ledger = measured ? *read[which] : *full[which];
  PlacementRequest r;
  r.id = "urgent";
  r.gpus = 72;
  r.locality = Locality::kRequired;
  size_t victims = 0;
  bool found = false;
  for (auto _ : state) {
    auto plan = PlanPreemption(ledger, r, candidates[which]);
    if (!plan.ok()) std::abort();
    found = plan->has_value();
    victims = found ? (*plan)->victims.size() : 0;
  }
  state.counters["candidates"] = static_cast<double>(candidates[which].size());
  state.counters["victims"] = static_cast<double>(victims);
  state.counters["found"] = found;
  const auto start = std::chrono::steady_clock::now();
  Ledger copy = ledger;
  benchmark::DoNotOptimize(copy);
  state.counters["ledger_copy_ms"] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

const int kRegistered = [] {
  const char* names[kFixtures] = {"4608gpu_64xNVL72", "72000gpu_1000xNVL72", "72000gpu_9000xHGX",
                                  "131112gpu_1821xNVL72", "131112gpu_1821xNVL72_capped"};
  for (int which = 0; which < kFixtures; ++which) {
    for (bool measured : {false, true}) {
      if (which == 2) continue;  // NVL72 fixtures: a 72-GPU job fills one rack
      const std::string name = std::string("Preemption/") + names[which] + (measured ? "/measured" : "");
      benchmark::RegisterBenchmark(name.c_str(), [which, measured](benchmark::State& s) {
        RunPreemption(s, which, measured);
      })->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark((std::string("Rackwise/") + names[which]).c_str(), [which](benchmark::State& s) {
      RunDecisions(s, which, PlaceWithRackwise);
    })->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string("LinearScanBestFit/") + names[which]).c_str(), [which](
                                                                                                 benchmark::State& s) {
      RunDecisions(s, which, PlaceWithLinearScanBestFit);
    })->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string("LinearScanFirstFit/") + names[which]).c_str(), [which](
                                                                                                  benchmark::State& s) {
      RunDecisions(s, which, PlaceWithLinearScanFirstFit);
    })->Unit(benchmark::kMicrosecond);
  }
  return 0;
}();

}  // namespace
}  // namespace rackwise::bench

BENCHMARK_MAIN();
