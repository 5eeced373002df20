// Synthetic job traces with documented mixes, so that demos and benchmarks need no data. Deterministic: the same
// parameters and seed give the same trace on every platform (own PRNG and distributions, no std:: distributions
// whose output differs between standard libraries).
//
// Mixes (job size in GPUs with weights; run time log-normal with the median and sigma given, clamped):
//   training   8:10 16:15 32:20 64:20 128:15 256:10 512:5 1024:5     median 4 h, sigma 1.0, 10 min..7 days
//              whole nodes; locality required 50%, preferred 50%
//   research   1:30 2:10 4:15 8:25 16:8 32:6 64:4 128:2               median 1 h, sigma 1.5, 1 min..3 days
//              locality preferred 70%, required 20%, none 10%
//   inference  1:50 2:20 4:20 8:10                                     median 10 min, sigma 1.0, 30 s..6 h
//              locality preferred 60%, none 40%
// Sizes above cluster_gpus are left out (the other weights are renormalised). A job larger than node_gpus asks
// for whole nodes (gpus_per_node = node_gpus when it divides the size, else 0). Arrivals are a Poisson process
// whose rate makes the offered load (GPU-seconds asked / (cluster_gpus x span)) equal `load`.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/trace.h"

namespace rackwise {

enum class TraceMix {
  kTraining,   // large, long multi-node jobs
  kResearch,   // a mix of single-GPU experiments and multi-node runs
  kInference,  // small, short jobs
};

absl::StatusOr<TraceMix> ParseTraceMix(std::string_view name);  // "training", "research", "inference"
const char* TraceMixName(TraceMix mix);

struct TraceGeneratorParams {
  TraceMix mix = TraceMix::kResearch;
  int jobs = 1000;
  uint64_t seed = 1;
  int cluster_gpus = 0;       // >= 1: caps job sizes and calibrates the arrival rate
  int node_gpus = 8;          // GPUs per node of the target cluster (8 HGX, 4 NVL72 trays)
  double load = 0.9;          // offered load, > 0 (above 1 the queue grows)
  double watts_fraction = 0;  // share of jobs that declare watts_per_gpu, 0..1
  double watts_per_gpu = 0;   // what they declare (e.g. a power-capped 500 W on 700 W GPUs)
};

absl::StatusOr<std::vector<TraceJob>> GenerateTrace(const TraceGeneratorParams& params);

}  // namespace rackwise
