// SPDX-License-Identifier: GPL-2.0-or-later
// How the plugin reads a Slurm node's state into the core's NodeHealth. Built with Slurm's headers (the state
// bits and IS_NODE_* macros are header-only), without a running slurmctld.
#include <gtest/gtest.h>

#include "slurm_records.h"

namespace rackwise::slurm {
namespace {

NodeHealth HealthOfState(uint32_t state) {
  node_record_t node{};
  node.node_state = state;
  return HealthOf(&node);
}

TEST(SlurmRecordsTest, DownFailedAndUnresponsiveNodesAreDown) {
  EXPECT_EQ(HealthOfState(NODE_STATE_DOWN), NodeHealth::kDown);
  EXPECT_EQ(HealthOfState(NODE_STATE_IDLE | NODE_STATE_FAIL), NodeHealth::kDown);
  EXPECT_EQ(HealthOfState(NODE_STATE_IDLE | NODE_STATE_NO_RESPOND), NodeHealth::kDown);
  EXPECT_EQ(HealthOfState(NODE_STATE_FUTURE), NodeHealth::kDown);
}

TEST(SlurmRecordsTest, DrainedNodesAreDrained) {
  EXPECT_EQ(HealthOfState(NODE_STATE_IDLE | NODE_STATE_DRAIN), NodeHealth::kDrained);
  EXPECT_EQ(HealthOfState(NODE_STATE_MIXED | NODE_STATE_DRAIN), NodeHealth::kDrained);
}

// Slurm's power saving suspends idle nodes and resumes them when it allocates them a job (node_scheduler.c
// gives powered-down nodes a higher weight, so they are offered last). Treating them as down would leave a job
// that only they can hold pending for ever: nothing would ever resume them. Their idle watts stay counted.
TEST(SlurmRecordsTest, PoweredDownNodesStayUsable) {
  EXPECT_EQ(HealthOfState(NODE_STATE_IDLE | NODE_STATE_POWERED_DOWN), NodeHealth::kUp);
  EXPECT_EQ(HealthOfState(NODE_STATE_IDLE | NODE_STATE_POWERED_DOWN | NODE_STATE_DRAIN), NodeHealth::kDrained);
  EXPECT_EQ(HealthOfState(NODE_STATE_DOWN | NODE_STATE_POWERED_DOWN), NodeHealth::kDown);
  EXPECT_EQ(HealthOfState(NODE_STATE_IDLE), NodeHealth::kUp);
  EXPECT_EQ(HealthOfState(NODE_STATE_MIXED), NodeHealth::kUp);
  EXPECT_EQ(HealthOfState(NODE_STATE_ALLOCATED), NodeHealth::kUp);
}

}  // namespace
}  // namespace rackwise::slurm
