// Power steering replayed: a saturated queue of jobs whose real power varies over their life, run under fixed caps
// in one-second steps, to compare what the same megawatts run when placements count declared watts (rackwise as it
// is), reclaim measured headroom, oversubscribe with requeue-on-overdraw, or oversubscribe with steering.
//
// The model, the same for every mode (so that ratios between modes of one run compare the rules, not the models):
//   - every `interval_s` (the telemetry interval) the replay reads each node's GPU watts (what the hardware draws
//     that second), applies them to the ledger as a face's poll does (modes with telemetry), steers or requeues
//     (by mode), then tries the first `queue_depth` queued jobs in order with the placer (greedy backfill, no
//     reservation); the queue is FIFO by submit time, a requeued job goes back to its front;
//   - each second a running job's GPU wants declared x its profile's share for that moment of its life and
//     draws min(that, its limit); held at a limit L below what it wants, it advances (L / wanted)^perf_exponent
//     seconds of its work per second (GPU throughput falls far slower than power: the exponent is an assumption,
//     stated in the report);
//   - limits set by steering take effect the second they are set (the node agent applies them in well under a
//     telemetry interval);
//   - work done is the GPU-seconds of progress within the horizon (a requeued job loses its progress), energy is the
//     real draw (idle included) integrated over the horizon, and a cap excursion is a run of seconds in which a
//     rack's or power domain's real draw is above its cap.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/topology.h"

namespace rackwise {

enum class SteeringMode {
  kDeclared,     // rackwise today: jobs count their declared watts, no telemetry, limits never move
  kReclaim,      // telemetry with reclaim_pct: a share of measured headroom is placed into; limits never move
  kRequeueOnly,  // oversubscription + telemetry; a rack over its cap requeues its newest jobs (requeue_newest)
  kSteer,        // oversubscription + telemetry + steering (on_overdraw: lower_limits)
  // Oversubscription is the topology's policy.oversubscribe_pct; steering's knobs are its policy.steering.
};
const char* SteeringModeName(SteeringMode mode);  // "declared", "reclaim", "requeue-only", "steer"

struct SteeringReplayOptions {
  SteeringMode mode = SteeringMode::kDeclared;
  double reclaim_fraction = 0.5;  // kReclaim
  double interval_s = 15;
  double horizon_s = 12 * 3600;
  double perf_exponent = 0.3;
  int queue_depth = 64;
};

struct SteeringReplayJob {
  int gpus = 0;
  int gpus_per_node = 0;  // 0: any split
  double submit_s = 0;
  double duration_s = 0;  // at full power
  // (seconds since start, share of declared watts wanted), piecewise constant, the first at 0; repeats after the
  // last segment's end (profile_period_s).
  std::vector<std::pair<double, double>> profile;
  double profile_period_s = 0;
};

// A saturated backlog for `topology`'s first node type: `count` jobs submitted at 0, sizes and durations drawn
// from the shapes such clusters run (whole NVLink domains and parts of one), each with a random power profile of
// segments of 5 to 30 minutes: compute-bound (85-100% of declared), mixed (55-85%) and communication or I/O
// phases (35-55%).
std::vector<SteeringReplayJob> GenerateSteeringWorkload(const Topology& topology, int count, uint64_t seed);

struct SteeringReplayReport {
  // The work done (GPU-hours at full speed), the energy it took, and their ratio.
  double work_gpu_hours = 0, energy_mwh = 0, gpu_hours_per_mwh = 0;
  // Jobs that started, that ran to their end, and that were requeued.
  int started = 0, completed = 0, requeued = 0;
  // Runs of seconds above a cap, over every rack and power domain: how many, their seconds in all, the longest,
  // and kW x s above the caps by the real draw.
  int excursions = 0;
  double excursion_s = 0, longest_excursion_s = 0, excursion_kws = 0;
  double mean_running_gpus = 0;
  double mean_held_jobs = 0;  // running jobs held below their declared watts, averaged over telemetry rounds
};

absl::StatusOr<SteeringReplayReport> ReplaySteering(const Topology& topology,
                                                    const std::vector<SteeringReplayJob>& jobs,
                                                    const SteeringReplayOptions& options);

}  // namespace rackwise
