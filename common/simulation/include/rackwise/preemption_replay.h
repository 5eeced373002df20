// Trace replay with priorities and preemption: what a priority job waits, what work preemption throws away, and
// where the preempting jobs land, for rackwise's victim choice against the one Slurm's cons_tres makes.
//
// Scheduling (the same for both policies): at every arrival and end, the queue is tried in priority order (higher
// first, then by submit time and trace position), and every job that fits starts (no backfill reservations: a
// priority job does not need one, it preempts). A job that does not fit, while running jobs of LOWER priority
// exist, asks its policy for victims; if it gets a set, the victims are requeued (they lose the work done since
// they started: requeue cost = lost work, GPUs x hours run; they start again from scratch) and the job starts.
// A job is never preempted by one of its own priority or lower, so nothing preempts back and forth.
//
// Policies:
//   rackwise           placement by the core (Placer::Place, caps enforced); victims by PlanPreemption over every
//                      running job of lower priority (priority, lost GPU-hours so far): the job in its fewest
//                      NVLink domains, under every cap less the reserve, at the fewest GPU-hours lost.
//   priority-order     what cons_tres does with preemptee candidates: placement by the tree-bestfit baseline
//                      (topology/tree best fit, power-unaware); running jobs of lower priority are removed in
//                      preemption order (lowest priority first, then the most recently started) until the job
//                      fits; the victims are those removed whose GPUs lie on the nodes it then gets. Domains and
//                      power play no part: caps may be overdrawn, and the meter measures by how much.
//
// Pure: no clock, no I/O.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/preemption.h"
#include "rackwise/topology.h"
#include "rackwise/trace.h"

namespace rackwise {

enum class PreemptionPolicy { kRackwise, kPriorityOrder };

absl::StatusOr<PreemptionPolicy> ParsePreemptionPolicy(std::string_view name);  // "rackwise", "priority-order"
const char* PreemptionPolicyName(PreemptionPolicy policy);

struct PreemptionReplayOptions {
  PreemptionPolicy policy = PreemptionPolicy::kRackwise;
  PreemptionLimits limits;  // rackwise's search bounds
};

// One preemption: a job started by requeueing others.
struct PreemptionEvent {
  int job = 0;               // the preempting job (index into the trace)
  double at = 0;             // seconds
  std::vector<int> victims;  // indexes into the trace, sorted
  double lost_gpu_hours = 0;
  int domains = 0;      // NVLink domains the preempting job got
  int min_domains = 0;  // the fewest it could have on an empty cluster (ceil(gpus / domain size))
  int racks = 0;        // racks it got
};

struct PreemptionReplayMetrics {
  int jobs = 0;
  int completed = 0;
  int rejected = 0;             // could never run on this cluster under the policy
  int high_priority_jobs = 0;   // jobs of a priority above the trace's lowest
  double high_mean_wait_s = 0;  // their first start - submit
  double high_p95_wait_s = 0;
  double low_mean_wait_s = 0;            // the others', to their last start
  int preemptions = 0;                   // jobs started by preempting
  int victims = 0;                       // requeues
  double lost_gpu_hours = 0;             // work thrown away by requeues
  double preempting_min_domain_pct = 0;  // preempting jobs in their fewest NVLink domains
  double preempting_mean_domains = 0;
  double preempting_mean_racks = 0;
  double power_violation_kws = 0;  // kW-seconds over every rack and power domain cap
  long long cap_excursions = 0;
  double makespan_s = 0;
};

struct PreemptionReplayResult {
  PreemptionReplayMetrics metrics;
  std::vector<PreemptionEvent> preemptions;  // in the order they happened
};

// Errors: InvalidArgument for an empty cluster or a malformed job (as Simulate); Internal if the ledger refuses
// what a policy chose (a bug).
absl::StatusOr<PreemptionReplayResult> SimulatePreemption(const Topology& topology, const std::vector<TraceJob>& jobs,
                                                          const PreemptionReplayOptions& options);

}  // namespace rackwise
