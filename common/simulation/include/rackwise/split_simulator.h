// Two schedulers on shared racks: one trace replayed by two owners, e.g. Slurm and Kubernetes, each
// with its own nodes, its own jobs and its own FIFO + EASY backfill queue (as rackwise::Simulate runs one), over
// one event timeline, either with one power ledger shared by both or with every budget cut in static halves.
//
// Nodes. Every rack's NVLink domains alternate between the owners (domain k of a rack, in node order, goes to
// owner k % 2: on HGX every other node). A rack that is a single NVLink domain (an NVL72 rack) goes whole: such
// racks alternate under their lowest power domain (the k-th such rack of a row, by rack id, goes to owner k % 2),
// so that both owners have nodes under every row that holds two racks or more. An NVLink domain is never split.
//
// Jobs. A job goes to owner (SplitMix64(FNV-1a(job id)) & 1): stable when the trace is filtered or reordered,
// and about half the jobs each.
//
// Each owner schedules only its own jobs on its own nodes: its ledger holds only its allocations and has the
// other owner's nodes down (so nothing is placed there, and their idle draw still counts). Each scheduler knows
// its own jobs' end times only (as Slurm and Kubernetes would), so its backfill reservations look at its own ends.
// At an instant when both act, the owner whose oldest queued job was submitted first schedules first.
//
// Modes (every rack and power domain; "budget" = cap less the policy's reserve less idle, the watts jobs may add):
//   shared  one ledger: an owner may use whatever the other leaves. Before each of its passes, an owner's caps
//           are the described ones less what the other owner's jobs draw there (counted, above idle), so that
//           together they never pass a cap. A head that waits with nothing of its own running is rejected only
//           if it could not start with the other owner drawing nothing; if the other owner's draw is what keeps
//           it out once its own jobs end, it reserves as if that draw were gone (its own backfill then keeps off).
//   static  each owner may add at most its share of every budget both owners have nodes under (owner 0
//           `static_share`, owner 1 the rest), however idle the other owner's share is: a job is refused when its
//           owner's share is full. A budget only one owner's nodes draw from (a whole NVL72 rack) is all its own.
// Idle draw is counted whole in both owners' ledgers (both see every node's idle) and once in the whole-cluster
// ledger that meters real draw against the described caps; shares are of the watts above idle.
//
// The comparison (BENCHMARKS.md) is the GPU-hours of jobs completed by a horizon common to both modes,
// by default the trace's last submit: with enough time every job ends in either mode, so work done by a fixed
// time is what sharing gains. Not modelled: measured power as telemetry (SimOptions::telemetry is refused).
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/simulator.h"

namespace rackwise {

enum class SplitMode { kShared, kStatic };

absl::StatusOr<SplitMode> ParseSplitMode(std::string_view name);  // "shared" or "static"
const char* SplitModeName(SplitMode mode);
// What the two owners are called in reports: "slurm" (0) and "k8s" (1).
const char* SplitOwnerName(int owner);

struct SplitOptions {
  SplitMode mode = SplitMode::kShared;
  double static_share = 0.5;        // kStatic: owner 0's share of every budget, in (0, 1); owner 1 has the rest
  std::vector<int> node_owner;      // per node, 0 or 1; empty: SplitNodeOwners
  std::vector<int> job_owner;       // per trace job, 0 or 1; empty: SplitJobOwners
  std::optional<double> horizon_s;  // trace time for gpu_hours_by_horizon; unset: the last submit
};

// The rules above.
std::vector<int> SplitNodeOwners(const Topology& topology);
std::vector<int> SplitJobOwners(const std::vector<TraceJob>& jobs);

struct SplitOwnerResult {
  // Over the owner's jobs and GPUs: jobs, completed, rejected, waits, gpu_utilization (of its GPUs, over its
  // makespan), locality, gpu_hours. Power and energy are the whole cluster's (SplitResult::overall).
  SimMetrics metrics;
  int gpus = 0;
  double gpu_hours_by_horizon = 0;       // jobs completed by the horizon, GPUs x trace duration
  double utilization_by_horizon = 0;     // allocated GPU-seconds by the horizon / (its GPUs x (horizon - first submit))
  std::vector<SimPlacement> placements;  // when SimOptions::record_placements, in start order
};

struct SplitResult {
  SplitMode mode = SplitMode::kShared;
  // The whole cluster: jobs, completed, rejected, makespan, waits, gpu_utilization, gpu_hours; power, energy and
  // violations metered against the described caps. Locality fields are left 0 (see the owners').
  SimMetrics overall;
  std::array<SplitOwnerResult, 2> owners;
  double horizon_s = 0;
  double gpu_hours_by_horizon = 0;
  std::vector<int> node_owner, job_owner;
};

// Errors: as Simulate, and InvalidArgument for a share outside (0, 1), owner lists of the wrong size or with
// values other than 0 and 1, an owner without GPUs, or telemetry; Internal if the whole cluster's ledger refuses
// what an owner placed (a bug: the owners together passed a cap).
absl::StatusOr<SplitResult> SimulateSplit(const Topology& topology, const std::vector<TraceJob>& jobs,
                                          const SimOptions& options, const SplitOptions& split);

}  // namespace rackwise
