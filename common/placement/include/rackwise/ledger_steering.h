// The steering rule (power_steering.h) fed from a Ledger: every rack and power domain as a scope (its cap less the
// policy's reserve; its fixed draw is idle plus whatever a fresh reading shows above what the jobs' limits allow),
// every allocation with its declared watts, its floor and the facts a face knows (limit in force, measured draw,
// priority, start order). Scope i < racks is RackId i; scope racks + p is PowerDomainId p.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "rackwise/ledger.h"
#include "rackwise/power_steering.h"

namespace rackwise {

// What a face knows of running jobs beyond the ledger, per allocation id; an id absent from a map takes the
// default: limit = declared, demand = limit, weight 1, started 0 (oldest).
struct SteeringFacts {
  absl::flat_hash_map<std::string, Milliwatts> limits;  // per GPU, in force now
  absl::flat_hash_map<std::string, Milliwatts> demand;  // per GPU, measured
  absl::flat_hash_map<std::string, double> weight;
  absl::flat_hash_map<std::string, int64_t> started;
  // Per GPU: the watts a job declared when the ledger counts it at less (oversubscription.h).
  absl::flat_hash_map<std::string, Milliwatts> declared;
  // Per GPU: the limit that was in force when the rack readings were taken, when it differs from `limits` (a
  // reading may predate the last change: its excess over the jobs' limits is judged against the older limit).
  absl::flat_hash_map<std::string, Milliwatts> reading_limits;
};

struct LedgerSteering {
  std::vector<SteeringScope> scopes;
  std::vector<SteeredAllocation> allocations;  // the ledger's, sorted by id
};

// A GPU's floor on `type`: the type's least declarable watts (the policy's min_watts_per_gpu or the GPU's idle
// share) or the policy's steering floor share of its nameplate watts, whichever is higher.
Milliwatts SteeringFloorPerGpu(const Topology& topology, const NodeType& type);

LedgerSteering BuildLedgerSteering(const Ledger& ledger, const SteeringFacts& facts);

// Per scope (the same indexing as LedgerSteering::scopes): the draw with every allocation at its planned limit
// (requeued ones gone), and how many allocations there are held below their declared watts. For status views.
struct SteeredScope {
  Milliwatts draw = 0;
  int held = 0;
};
std::vector<SteeredScope> SteeredScopes(const LedgerSteering& input, const SteeringPlan& plan);

// The whole round: the plan for the ledger as it is. Settings come from the policy.
SteeringPlan PlanLedgerSteering(const Ledger& ledger, const SteeringFacts& facts, LedgerSteering* input = nullptr);

}  // namespace rackwise
