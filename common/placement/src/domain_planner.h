// Internal to the placer: which NVLink domains a job uses, and how many GPUs from each.
//
// Single-domain jobs take the best-fitting domain (the fewest free GPUs that still hold the job), so that
// whole domains stay free for large jobs. Larger jobs take the fewest domains, preferring to stay inside one
// rack, then one scalable unit, and among those the tightest set (best fit across domains: partly used domains
// before whole ones); power shared by domains of a rack or row is accounted as the plan grows.
#pragma once

#include <optional>
#include <vector>

#include "placement_context.h"

namespace rackwise::internal {

struct DomainTake {
  DomainId domain = kNoId;
  int gpus = 0;
};

struct DomainPlan {
  std::vector<DomainTake> takes;
  GpuMask rail_set = 0;  // the GPU indices every node should use, when rail alignment applies (else 0)
};

// The best single domain holding the whole job, or nullopt. `partly_used_only`: only domains that already have
// GPUs in use (or missing), so that whole domains stay free (locality none).
std::optional<DomainPlan> PlanSingleDomain(const PlacementContext& ctx, bool partly_used_only = false);

// Several domains (fewest first for required/preferred; smallest fragments first for none), or nullopt when
// the free, powered GPUs do not add up to the job.
std::optional<DomainPlan> PlanMultiDomain(const PlacementContext& ctx, PowerScratch* scratch);

}  // namespace rackwise::internal
