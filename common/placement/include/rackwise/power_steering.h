// Power steering: the GPU power limits that keep every rack and power domain under its cap while jobs run.
// Pure (no clock, no I/O): faces and the simulator pass the facts of one telemetry round, the rule returns the
// limit each running allocation's GPUs should have and the allocations to requeue. ledger_steering.h builds the
// facts from a Ledger.
//
// The contract, for scopes s (racks and power domains, nested or not: each allocation lists every scope its GPUs
// count under, with how many) and allocations a:
//   - a's GPUs draw min(limit_a, demand_a) each; scope s draws fixed_s + sum_a gpus_as * min(limit_a, demand_a),
//     where fixed_s is what no steered allocation explains (idle draw, a measured excess) and demand_a is the most
//     a GPU of a draws (its measured draw; when it is not measured, anything up to its declared watts);
//   - limits stay within [floor_a, declared_a]; floor_a is the board's or the policy's minimum, whichever is higher;
//   - requeue: while some scope is over its limit with every allocation in it at its floor, the newest allocation
//     of the first such scope (latest start, ties to the greater id) is requeued and its draw leaves every scope;
//   - fair cut: each remaining allocation loses the share x_a of its headroom (declared_a - floor_a), limit_a =
//     declared_a - x_a * headroom_a (rounded down to the milliwatt). x_a = min(1, level_a / weight_a), where
//     level_a is the level at which the last over-cap scope of a came back under its limit when every
//     allocation of every over-cap scope has its level raised together from 0 (progressive filling). Without
//     weights every allocation of one over-cap scope loses the same share; with weights (priority) a job of weight
//     2 loses half the share of one of weight 1. Then the give-back: the allocations none of whose scopes is at
//     its limit get their levels lowered together (the reverse filling) until one of their scopes is, so that no
//     allocation is cut for a scope that does not need it (a job under a row over its cap shares the row's cut,
//     unless a rack of another job under that row has to cut that job deeper anyway).
//   - hysteresis: a limit is lowered at once to the target above, and raised only up to the target computed with
//     every scope limit less `hysteresis_fraction` of it, a job at (or within 3% of) its limit being taken to want
//     its declared watts; between the two it stays where it is, so a reading that moves within the band changes
//     nothing. A new allocation's current limit is its declared watts.
// Every scope whose fixed draw alone is above its limit is reported as unmet (nothing the jobs can do).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rackwise/topology.h"

namespace rackwise {

struct SteeringScope {
  std::string name;      // for messages: "rack r01", "power domain row-a"
  Milliwatts limit = 0;  // the cap less the policy's reserve
  Milliwatts fixed = 0;  // draw not explained by the steered allocations
};

struct SteeringShare {
  int scope = 0;  // index into the scopes
  int64_t gpus = 0;
};

struct SteeredAllocation {
  std::string id;
  std::vector<SteeringShare> shares;  // every scope the GPUs count under (a scope at most once)
  Milliwatts declared = 0;            // per GPU: what the job declared (or the node type's default)
  Milliwatts floor = 0;               // per GPU: never steered below this (<= declared)
  Milliwatts current = 0;             // per GPU: the limit in force now
  Milliwatts demand = 0;              // per GPU: what it draws now at most (measured; unknown: >= declared)
  double weight = 1;                  // > 0: priority; a larger weight loses a smaller share
  int64_t started = 0;                // start order on any one clock (greater: newer)
};

struct SteeringSettings {
  double hysteresis_fraction = 0.05;  // 0..0.5
  bool weighted = false;              // use SteeredAllocation::weight (else every weight is 1)
};

struct SteeringPlan {
  std::vector<Milliwatts> limits;  // per allocation, in input order; requeued ones keep `current`
  std::vector<int> requeue;        // allocation indices, in the order to requeue
  std::vector<int> unmet_scopes;   // scopes still over their limit with nothing left to lower or requeue
  int held_below_declared = 0;     // allocations whose new limit is below their declared watts
};

// The whole rule, as stated above.
SteeringPlan PlanSteering(const std::vector<SteeringScope>& scopes, const std::vector<SteeredAllocation>& input,
                          const SteeringSettings& settings);

// One step of it, exposed for tests: the target limits (no hysteresis) for the allocations not in `skip`, against
// the scopes' limits scaled by `limit_scale`, each allocation's draw taken as min(limit, demand_for(a)).
std::vector<Milliwatts> SteeringTargets(const std::vector<SteeringScope>& scopes,
                                        const std::vector<SteeredAllocation>& allocations,
                                        const std::vector<Milliwatts>& demand, const std::vector<char>& skip,
                                        bool weighted, double limit_scale = 1.0);

}  // namespace rackwise
