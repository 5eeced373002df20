// Trace replay: runs a job trace against a cluster, event by event, under one placement policy, and measures what
// an operator cares about (utilisation, waits, NVLink locality, rail alignment, power over the caps, energy).
//
// Scheduling is FIFO with EASY backfill, as Slurm's sched/backfill does with node bitmaps: the queue head starts
// as soon as it fits; when it cannot, it gets a reservation: walking the running jobs by end time (the trace
// duration is the run-time estimate), the first end at which the policy could place the head is its "shadow
// time", and the nodes the policy would give it then are reserved. Later jobs may start now if they fit and either
// end by the shadow time or stay off the reserved nodes. Up to `backfill_depth` queued jobs are tried per pass.
// For `rackwise` and `capped-first-fit` (which keep to the caps) the reservation also holds watts: a job that outlasts
// the shadow time may only use what the head's racks and power domains can spare then, so the head starts by its shadow
// time even when caps bind. The power-unaware baselines' reservations hold nodes only.
//
// Policies:
//   rackwise      Placer::Place (NVLink domains, rails, power caps), committed with CommitMode::kEnforce. A
//                 backfilled `preferred` job starts only in its fewest NVLink domains; the head holds out for them
//                 while the core's rule (PreferredHoldsOut) says waiting is cheaper than spreading, its wait
//                 counted from when it reached the head (for the policy's preferred_wait_s bound). Only rackwise
//                 reads the policy's locality knobs; every baseline is what its name says.
//   first-fit     nodes in order; a job of at most one node's GPUs goes to the first node with room, larger jobs
//                 take free GPUs node by node. Power-unaware.
//   spread        kube-scheduler's default least-allocated scoring: the job's pods (gpus_per_node GPUs each, or
//                 one pod if it fits a node, else node-sized pods) go one by one to the node with the largest share
//                 of free GPUs. Power-unaware.
//   tree-bestfit  Slurm cons_tres + topology/tree with leaf switch = NVLink domain and the scalable unit above:
//                 the best-fitting single domain, else the best-fitting scalable unit (largest domains first),
//                 else the whole cluster. Power-unaware.
//   static-cap    tree-bestfit, but each rack may only hold the GPUs its cap allows at full load (and the racks
//                 under a power domain share what that domain's cap allows), as administrators set by hand.
//   capped-first-fit  first-fit that takes a node's share only if its rack and every power domain above it can
//                 power it under the cap less the policy's reserve (an any-split job takes what they can power);
//                 committed with CommitMode::kEnforce, with the same power-holding reservations as rackwise.
//                 The simplest scheduler that is legal under the caps: nothing about NVLink domains or rails.
// The other baselines never give a GPU twice, but their power is not prevented: they commit with CommitMode::kRecover
// and the kW-seconds above every rack and power domain cap are measured.
//
// The core reads no clock: jobs per second of replay are measured by the caller.
//
// One trace split between two schedulers on shared racks is rackwise/split_simulator.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/allocation.h"
#include "rackwise/topology.h"
#include "rackwise/trace.h"

namespace rackwise {

enum class SimPolicy {
  kRackwise,        // the placement core
  kFirstFit,        // nodes in order
  kSpread,          // kube-scheduler least-allocated
  kTreeBestFit,     // Slurm topology/tree best fit, leaf = NVLink domain
  kStaticCap,       // tree-bestfit with per-rack GPU limits derived from the caps
  kCappedFirstFit,  // first-fit that never exceeds a cap less the reserve
};

absl::StatusOr<SimPolicy> ParseSimPolicy(std::string_view name);  // "rackwise", "first-fit", ...
const char* SimPolicyName(SimPolicy policy);
std::vector<SimPolicy> AllSimPolicies();

struct SimOptions {
  SimPolicy policy = SimPolicy::kRackwise;
  bool backfill = true;
  int backfill_depth = 500;  // queued jobs tried per pass after the head (Slurm's bf_max_job_test default)
  bool record_placements = false;
  // rackwise only: before asking the placer, check a cheap necessary condition (free GPUs and power room per rack
  // and power domain); when it fails the placer would refuse, so the job waits without the placer's node-by-node
  // refusal report. Same results, much faster when caps bind; off only to prove that in tests.
  bool placer_bound = true;
  // A job placed in more NVLink domains than ceil(gpus / domain size) runs this much longer (0.2: 20%), as its
  // collectives leave NVLink for the scale-out network. The same physical minimum for every policy (not the
  // fewest the caps allow). 0: every job runs for its trace duration. Backfill treats every job as possibly
  // slowed when it checks whether it would end by the head's shadow time.
  double spread_slowdown = 0;
  // Measured power replayed as telemetry. Jobs draw their trace's measured_watts_per_gpu (what they are counted
  // at when they have none) whether or not this is on: the meter always measures that real draw. With it on,
  // before each scheduling pass every node's real GPU watts go to the ledger as a fresh node power reading,
  // through MeasureRacks and ApplyMeasuredDraw as a face's poll does, so that placements count
  // max(estimate, measured) per rack and power domain, less `reclaim_fraction` (0..0.5, the description's
  // reclaim_pct / 100) of the gap where a rack measures below its estimate.
  bool telemetry = false;
  double reclaim_fraction = 0;
};

// One started job.
struct SimPlacement {
  int job = 0;  // index into the trace
  double start = 0;
  double end = 0;
  std::vector<NodeGpus> nodes;  // ordered by node id
  Milliwatts per_gpu = 0;       // 0: the node type's draw
  int domains = 0;
  int min_domains = 0;
  std::vector<RackId> racks;  // ordered by id
  bool rail_aligned = true;
  bool slowed = false;  // ran longer by SimOptions::spread_slowdown: outside its fewest NVLink domains
};

struct SimMetrics {
  int jobs = 0;            // in the trace
  int completed = 0;       // started and finished
  int rejected = 0;        // can never run on this cluster (too large, bad request, or not even alone)
  double makespan_s = 0;   // first submit to last end
  double mean_wait_s = 0;  // start - submit, over completed jobs
  double p95_wait_s = 0;
  double gpu_utilization = 0;           // allocated GPU-seconds / (GPUs x makespan)
  double goodput = 0;                   // the trace's GPU-seconds (durations as given) / (GPUs x makespan): the work
                                        // done rather than the time GPUs were held; below gpu_utilization only
                                        // when spread_slowdown stretched some jobs
  double gpu_utilization_arrivals = 0;  // the same from the first to the last submit: while work keeps arriving,
                                        // before the queue drains (less sensitive to the last long jobs)
  double min_domain_pct = 0;            // completed jobs in the fewest NVLink domains, ceil(gpus / domain size)
  double min_domain_pct_local = 0;      // the same over jobs that want locality (required, preferred or the default;
                                        // not `none`, which asks to fill fragments)
  double mean_domains_per_job = 0;
  double rail_aligned_pct = 0;  // multi-node jobs with the same GPU indices on every node
  // Power is what the hardware draws: idle plus each job's measured watts per GPU (else what it is counted at).
  double power_violation_kws = 0;   // rack_violation_kws + domain_violation_kws
  double rack_violation_kws = 0;    // integral over time of sum over racks of max(0, draw - cap)
  double domain_violation_kws = 0;  // the same over power domains
  long long cap_excursions = 0;     // times a rack's or power domain's draw rose above its cap
  double peak_rack_kw = 0;
  double gpu_hours = 0;   // of completed jobs
  double energy_mwh = 0;  // whole cluster (idle included) over the makespan
  double gpu_hours_per_mwh = 0;
  long long placement_attempts = 0;
  double power_ceiling = 0;  // SimPowerCeiling as a share of the cluster's GPUs (1: the caps never bind on average)
};

// The queue head's backfill reservation: the nodes it would get at its shadow time. While it is in force
// (from `made` to `until`: the head started, or the reservation was recomputed), a job that starts before the
// shadow time and ends after it is kept off these nodes.
struct SimReservation {
  int job = 0;  // index into the trace
  double made = 0;
  double until = 0;
  double shadow = 0;          // infinity: the head could not be placed even with every running job gone
  std::vector<NodeId> nodes;  // sorted
};

struct SimResult {
  SimMetrics metrics;
  std::vector<SimPlacement> placements;      // when record_placements, in start order
  std::vector<SimReservation> reservations;  // when record_placements, in the order they ended
};

// The power ceiling: the most GPUs the caps (less the policy's reserve) let a replay of `jobs` keep busy on
// average, at the trace's watts. Over the makespan T, the jobs' GPUs draw E = sum(gpus x duration x watts) above
// idle, and at no instant more than P = the watts the caps let through (each rack's room, at most all its GPUs at
// the trace's highest draw, rolled up under every power domain's room). So T >= E / P, and the busy GPUs average
// at most sum(gpus x duration) / T <= P / (E / sum(gpus x duration)): P over the trace's GPU-second-weighted
// mean draw, and never more than the cluster's GPUs. Jobs that declare no draw count at the lowest node type's.
// A policy that keeps to the caps and runs every job cannot pass it (one that rejects jobs runs a different
// mix); power-blind policies can, by drawing over the caps.
double SimPowerCeiling(const Topology& topology, const std::vector<TraceJob>& jobs);

// Replays `jobs` (any order; sorted by submit time, ties by position). Errors: InvalidArgument for an empty
// cluster; Internal if the ledger refuses what a policy chose (a bug).
absl::StatusOr<SimResult> Simulate(const Topology& topology, const std::vector<TraceJob>& jobs,
                                   const SimOptions& options);

// One line of the placements file (docs/design.md):
// {"id":..,"start":..,"end":..,"nodes":[..],"gpus":{"node":[idx,..]},"domains":N,"racks":[..]}
std::string PlacementJsonLine(const Topology& topology, const std::vector<TraceJob>& jobs,
                              const SimPlacement& placement);

}  // namespace rackwise
