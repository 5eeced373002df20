// The physical bounds on every watt and cap rackwise accepts, wherever it comes from (the description, a state
// file, a request, a pod annotation, a Slurm option, the gRPC service, a trace), and the per-node-type floor
// under declared watts. Every face checks through these functions, so that what one face accepts another does too.
//
// Why bounds at all: power is kept in integer milliwatts (int64) so that releasing an allocation returns the
// ledger exactly to where it was. Unbounded inputs (`node_watts: 1e17`) overflow that arithmetic and then a cap
// no longer holds anything back. With the bounds below, no sum the ledger or the placer forms can overflow:
//
//   a node draws at most  idle + gpus * per_gpu  <=  node_watts + gpus * max(declared)
//                         <=  100 kW + 64 * 10 kW  =  740 kW  =  7.4e8 mW;
//   a cluster has at most 262,144 (2^18) nodes, so every draw (a rack's, a domain's, the whole cluster's) is at
//   most 2^18 * 7.4e8 mW < 2e14 mW; a cap is at most 10 GW = 1e13 mW.
//
// Draws, caps, their differences and the sums over a power chain therefore stay below 1e15 mW, four orders of
// magnitude under INT64_MAX (9.2e18). The static_assert below checks the arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rackwise {

// GPUs per node: a GPU set is a 64-bit mask.
inline constexpr int kMaxGpusPerNode = 64;
// Nodes per cluster (far above any real cluster: a guard against hostile hostlists as much as a product limit).
inline constexpr size_t kMaxClusterNodes = 262'144;
// One node at full load. The largest servers today (8-GPU B300 boards) draw about 15 kW.
inline constexpr double kMaxNodeWatts = 100'000;
// One GPU, declared or nameplate. Today's largest boards draw 1.4 kW.
inline constexpr double kMaxWattsPerGpu = 10'000;
// The least a job may declare per GPU on any node type; each node type has its own, higher floor (below).
inline constexpr double kMinWattsPerGpu = 1;
// One rack or power domain: 10 GW (the largest campuses being planned draw 1 to 5 GW).
inline constexpr double kMaxCapKw = 10'000'000;

static_assert(kMaxClusterNodes * (kMaxNodeWatts + kMaxGpusPerNode * kMaxWattsPerGpu) * 1000 + 2 * kMaxCapKw * 1e6 <
                  1e-3 * static_cast<double>(std::numeric_limits<int64_t>::max()),
              "the bounds must keep every milliwatt sum far inside int64");

// A declared draw per GPU: 0 (nothing declared: the node type's default) or a finite number of watts in
// [kMinWattsPerGpu, kMaxWattsPerGpu]. InvalidArgument otherwise, with the value and the range.
absl::Status CheckWattsPerGpu(double watts);

// Text a user typed for watts per GPU ("700", " 450.5 "): a decimal number that CheckWattsPerGpu accepts and
// that is not 0 (a declaration of nothing is left out instead). InvalidArgument otherwise; callers prefix their
// field name (`--gpu-watts`, the annotation).
absl::StatusOr<double> ParseWattsPerGpu(std::string_view text);

// A power cap in kilowatts: finite, 0..kMaxCapKw. A run-time cap of 0 stops new placements under it; a
// described cap must also be above 0 (the description validator says so).
absl::Status CheckCapKw(double kilowatts);
// A measured draw in kilowatts (a state file's rack readings): the same range as a cap.
absl::Status CheckMeasuredKw(double kilowatts);

// The share of the gap between a rack's estimate and its lower measured draw that placements may use
// (telemetry.reclaim_pct, and the writer's value in a state file): 0..kMaxReclaimPct. Above 50 the counted draw
// could fall below what the rack measures. InvalidArgument "must be between 0 and 50, got X" otherwise; callers
// prefix their field name.
inline constexpr double kMaxReclaimPct = 50;
absl::Status CheckReclaimPct(double pct);

// The least a job may declare per GPU on a node type when the policy says nothing higher: the GPU's share of
// the node's idle draw. A GPU limited to W watts still draws its own idle power, so declaring less than that
// share would make the job (nearly) free to the ledger. The share is in proportion to the GPU's part of the
// node's full load: idle_watts * gpu_watts / node_watts with a nameplate, else idle_watts * (node_watts -
// idle_watts) / (gpus * node_watts). It never exceeds the type's default draw per GPU (declaring the default is
// always allowed) and never falls below kMinWattsPerGpu. Expects values that passed validation.
double IdleShareWattsPerGpu(int gpus, double idle_watts, double node_watts, double gpu_watts);

}  // namespace rackwise
