// For PlanPreemption's tests: the checks every plan must pass, shared by the hand cases and the property test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "rackwise/ledger.h"
#include "rackwise/preemption.h"
#include "rackwise/start_guard.h"

namespace rackwise {

// The plan's victims are sorted and held, and its decision gives the job exactly its GPUs on the ledger without
// them, under the usable caps.
inline void ExpectPreemptionPlanHolds(const Ledger& ledger, const PlacementRequest& request,
                                      const PreemptionPlan& plan) {
  EXPECT_TRUE(std::is_sorted(plan.victims.begin(), plan.victims.end()));
  Ledger without = ledger;
  for (const std::string& id : plan.victims) EXPECT_TRUE(without.Release(id)) << id;
  EXPECT_TRUE(CommitWithinUsableCaps(without, plan.decision.ToAllocation(request.id)).ok());
  int gpus = 0;
  for (const NodeGpus& ng : plan.decision.nodes) gpus += GpuCount(ng.gpus);
  EXPECT_EQ(gpus, request.gpus);
}

}  // namespace rackwise
