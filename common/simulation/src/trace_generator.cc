// Synthetic traces; the mixes are documented in rackwise/trace_generator.h.
#include "rackwise/trace_generator.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rackwise {
namespace {

// SplitMix64: tiny, fast, and the same sequence everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Normal() {                                                           // Box-Muller
    const double u1 = 1.0 - Uniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  double Exponential(double mean) { return -mean * std::log(1.0 - Uniform()); }

 private:
  uint64_t state_;
};

struct Weighted {
  int value;
  double weight;
};

struct Mix {
  std::vector<Weighted> sizes;
  double median_s, sigma, min_s, max_s;
  double required, preferred;  // the rest: none
};

Mix MixOf(TraceMix mix) {
  switch (mix) {
    case TraceMix::kTraining:
      return {{{8, 10}, {16, 15}, {32, 20}, {64, 20}, {128, 15}, {256, 10}, {512, 5}, {1024, 5}},
              4 * 3600.0,
              1.0,
              600.0,
              7 * 86400.0,
              0.5,
              0.5};
    case TraceMix::kResearch:
      return {{{1, 30}, {2, 10}, {4, 15}, {8, 25}, {16, 8}, {32, 6}, {64, 4}, {128, 2}},
              3600.0,
              1.5,
              60.0,
              3 * 86400.0,
              0.2,
              0.7};
    case TraceMix::kInference: return {{{1, 50}, {2, 20}, {4, 20}, {8, 10}}, 600.0, 1.0, 30.0, 6 * 3600.0, 0.0, 0.6};
  }
  return {};
}

}  // namespace

absl::StatusOr<TraceMix> ParseTraceMix(std::string_view name) {
  if (name == "training") return TraceMix::kTraining;
  if (name == "research") return TraceMix::kResearch;
  if (name == "inference") return TraceMix::kInference;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown mix '", std::string(name), "' (training, research, inference)"));
}

const char* TraceMixName(TraceMix mix) {
  switch (mix) {
    case TraceMix::kTraining: return "training";
    case TraceMix::kResearch: return "research";
    case TraceMix::kInference: return "inference";
  }
  return "?";
}

absl::StatusOr<std::vector<TraceJob>> GenerateTrace(const TraceGeneratorParams& p) {
  if (p.jobs < 0 || p.jobs > 10'000'000) return absl::InvalidArgumentError("jobs: must be 0..10000000");
  if (p.cluster_gpus < 1) return absl::InvalidArgumentError("cluster_gpus: must be >= 1");
  if (p.node_gpus < 1 || p.node_gpus > 64) return absl::InvalidArgumentError("node_gpus: must be 1..64");
  if (!(p.load > 0 && p.load <= 100)) return absl::InvalidArgumentError("load: must be in (0, 100]");
  if (!(p.watts_fraction >= 0 && p.watts_fraction <= 1)) {
    return absl::InvalidArgumentError("watts_fraction: must be 0..1");
  }
  if (p.watts_fraction > 0 && !(p.watts_per_gpu > 0)) {
    return absl::InvalidArgumentError("watts_per_gpu: must be > 0 when watts_fraction > 0");
  }
  Mix mix = MixOf(p.mix);
  std::vector<Weighted> sizes;
  double total_weight = 0;
  for (const Weighted& w : mix.sizes) {
    if (w.value > p.cluster_gpus) continue;
    sizes.push_back(w);
    total_weight += w.weight;
  }
  if (sizes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cluster_gpus: %d is smaller than the smallest job of the %s mix (%d)", p.cluster_gpus,
                        TraceMixName(p.mix), mix.sizes[0].value));
  }
  Rng rng(p.seed);
  std::vector<TraceJob> jobs(p.jobs);
  double gpu_seconds = 0;
  const int digits = std::max<int>(6, absl::StrCat(p.jobs).size());
  for (int i = 0; i < p.jobs; ++i) {
    TraceJob& j = jobs[i];
    j.id = absl::StrFormat("%s-%0*d", TraceMixName(p.mix), digits, i + 1);
    double pick = rng.Uniform() * total_weight;
    j.gpus = sizes.back().value;
    for (const Weighted& w : sizes) {
      if (pick < w.weight) {
        j.gpus = w.value;
        break;
      }
      pick -= w.weight;
    }
    if (j.gpus > p.node_gpus && j.gpus % p.node_gpus == 0) j.gpus_per_node = p.node_gpus;
    const double d = mix.median_s * std::exp(mix.sigma * rng.Normal());
    j.duration = std::round(std::clamp(d, mix.min_s, mix.max_s));
    const double l = rng.Uniform();
    j.locality = l < mix.required                   ? Locality::kRequired
                 : l < mix.required + mix.preferred ? Locality::kPreferred
                                                    : Locality::kNone;
    if (p.watts_fraction > 0 && rng.Uniform() < p.watts_fraction) j.watts_per_gpu = p.watts_per_gpu;
    gpu_seconds += j.gpus * j.duration;
  }
  // Poisson arrivals over the span that gives the offered load.
  const double span = gpu_seconds / (p.load * p.cluster_gpus);
  const double mean_gap = p.jobs > 0 ? span / p.jobs : 0;
  double t = 0;
  for (TraceJob& j : jobs) {
    j.submit = std::floor(t);
    t += rng.Exponential(mean_gap);
  }
  return jobs;
}

}  // namespace rackwise
