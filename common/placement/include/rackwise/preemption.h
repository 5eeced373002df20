// Which running jobs to preempt so that a waiting one can start: the victims, and where the job then goes.
// Pure (no I/O, no clock): the faces decide whether to preempt at all and carry it out; the core only says which
// set of the candidates they offer makes room at the least cost, and the placement that room allows.
//
// A set "makes room" when Placer::Place, on the ledger without those allocations, places the job: the same
// locality rules (`required`: the fewest domains over every node type it may use; `preferred` and `none`: Place's
// own answer), the same caps less the policy's reserve. Among the sets that make room the cheapest wins, compared
// in this order:
//   1. fewest GPU-hours lost (the sum of the victims' lost_gpu_hours, counted in whole micro-GPU-hours so that
//      equal sums tie exactly whatever the order they were added in);
//   2. fewest victims;
//   3. lowest SUM of the victims' priorities (a sum, not the max: with 1 and 2 equal, two victims of priority 3
//      are dearer than one of priority 5 only if 6 > 5, so every term of the cost adds up over the victims);
//   4. the victims' ids, sorted, compared lexicographically (a deterministic last word).
// Lost hours are never negative, so dropping a victim always gives a cheaper set: the cheapest set that makes room
// is minimal (no victim can be dropped with the job still placed), and the bounded search below keeps that
// property by dropping what it can before it compares.
//
// Relevant candidates are those that can matter to this job: allocations with GPUs on a rack that holds a node
// the job may use (allowed, not excluded, of a type it may use), or below a power domain above such a rack.
// Candidates the ledger does not hold, or that are not relevant, free nothing the job can use and are never
// chosen.
//
// The search, and what its bound gives up:
//  - up to `exhaustive_candidates` relevant candidates: every subset is a candidate set, tried cheapest first
//    (sets whose freed GPUs cannot add up to the job are skipped without asking Place); the first that makes
//    room is the answer, exact as long as no more than `max_place_calls` sets had to be tried first. nullopt
//    when the job does not fit with every relevant candidate gone;
//  - beyond that, or once the calls run out: a bounded search per scope. Each rack that holds a usable node and
//    a candidate is a scope: its own candidates cheapest first, then those elsewhere under its power domains
//    (they free power, not GPUs). Racks are tried in the order of what freeing enough GPUs there costs, while
//    three quarters of the calls last. Then one scope across racks, cheapest first, for jobs that span racks (or
//    need not stay in one: `preferred`, `none`): every relevant candidate, or only the 256 cheapest once a rack
//    gave a set and one rack could hold the job (at 131k GPUs a cheapest-first prefix of every running job that
//    frees a whole rack holds thousands, and each trial would release them all). When no rack gave a set, that
//    scope has no bound on calls; it first asks whether the job fits with every candidate gone, and the answer
//    is nullopt if not. In each scope the shortest cheapest-first prefix that makes room is found by doubling
//    then bisection (a trial releases about as many candidates as the answer holds, not the whole scope), cut
//    to the candidates the trial's placement needs (those holding its GPUs; else those in its racks or under
//    their power domains), and victims are then dropped most expensive first while the job still fits. The
//    cheapest result over the scopes wins. This can miss the optimum when the cheapest set is not a
//    cheapest-first prefix of one scope (two cheap jobs in one rack against one dear job that alone would do
//    elsewhere), when it spans racks beyond the 256 cheapest for a job one rack could hold, or when the calls
//    run out before the rack that holds it was tried (on small random clusters with the exhaustive stage off, 7
//    of 5,000 cases cost more than the optimum). Whatever the calls left, the answer is then minimized once
//    more, at most one call per victim, so that no victim it can do without stays;
//  - both rest on freeing more never taking a GPU or a watt away, so that a superset of a set that makes room
//    makes room too (Place's multi-domain search is greedy: on some power-bound ledger it might miss on an
//    emptier ledger a plan it finds on a fuller one; 20,000 random cases against the exhaustive checker found
//    none).
// Each trial releases the set on one scratch copy of the ledger, asks Place, and commits the set back, so the
// ledger is copied once for the trials, not once per set; and once more for the answer's decision, which Place
// gives on a fresh copy without the victims: the state the face's ledger will be in once it releases them (after
// trials the scratch copy lists equal domains in another order, where Place may pick other nodes).
//
// Racks with a power reading (telemetry): committing back counts the victim as placed since the reading, so
// after a trial touching such a rack the scratch copy is made afresh (a copy of the whole ledger, about 1 ms at
// 131k GPUs, counted as 8 calls against `max_place_calls`). The ledger keeps counting a released job's power on
// a measured rack until the next reading, so there preemption frees GPUs at once but power only after the next
// reading: a job that needs the victims' power gets no plan until then.
//
// Measured (tests/bench/placement_bench, Preemption/*, on a shared 2-core machine): one decision for a 72-GPU
// `required` job on 131k GPUs, every GPU held, every running job a candidate (12,685), takes about 17 ms of CPU;
// 25 ms with binding caps (2,707 candidates); 86 ms when every rack carries a power reading.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_decision.h"
#include "rackwise/placement_request.h"

namespace rackwise {

struct PreemptionCandidate {
  std::string id;             // an allocation id held in the ledger
  int64_t priority = 0;       // |priority| <= kMaxPreemptionPriority
  double lost_gpu_hours = 0;  // work lost if preempted: finite, 0..kMaxLostGpuHours
};

struct PreemptionPlan {
  PlacementDecision decision;        // where the job goes once the victims are gone
  std::vector<std::string> victims;  // sorted; empty when the job fits as things are
  double lost_gpu_hours = 0;         // the victims' sum
};

struct PreemptionLimits {
  int exhaustive_candidates = 14;  // relevant candidates up to which every subset is considered (at most 20)
  int max_place_calls = 512;       // Placer::Place calls per decision after the first (>= 1), besides the
                                   // last pass over the answer (at most one per victim) and the scope across
                                   // racks when no rack gave a set (about log2(candidates) plus its answer's
                                   // victims): see the search above
};

inline constexpr int64_t kMaxPreemptionPriority = int64_t{1} << 40;
inline constexpr double kMaxLostGpuHours = 1e7;  // ten million GPU-hours: 131k GPUs for 76 hours

// nullopt: no set of candidates makes room (the job waits, or can never run). InvalidArgument for a malformed
// request (as Placer::Place), a candidate id empty or given twice, a priority or lost hours out of range, or
// limits out of range. The ledger is not changed.
absl::StatusOr<std::optional<PreemptionPlan>> PlanPreemption(const Ledger& ledger, const PlacementRequest& request,
                                                             absl::Span<const PreemptionCandidate> candidates,
                                                             const PreemptionLimits& limits = {});

}  // namespace rackwise
