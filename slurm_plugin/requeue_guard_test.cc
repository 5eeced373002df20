// SPDX-License-Identifier: GPL-2.0-or-later
// Tests for the requeued-job guard: the window Slurm's credential cache implies, and the departures kept.
#include "requeue_guard.h"

#include <gtest/gtest.h>

namespace rackwise::slurm {
namespace {

TEST(PrologSkipWindow, FollowsSlurmsCredExpireRules) {
  EXPECT_EQ(PrologSkipWindowSeconds("", 30), 120 + 30 + 1);
  EXPECT_EQ(PrologSkipWindowSeconds("cred_expire=10", 5), 10 + 5 + 1);
  EXPECT_EQ(PrologSkipWindowSeconds("socket=/run/munge.sock,cred_expire=300", 0), 300 + 5 + 1);  // KillWait >= 5
  EXPECT_EQ(PrologSkipWindowSeconds("cred_expire=4", 5), 120 + 5 + 1);    // below Slurm's minimum: its default
  EXPECT_EQ(PrologSkipWindowSeconds("cred_expire=abc", 5), 120 + 5 + 1);  // unreadable: the default
  EXPECT_EQ(PrologSkipWindowSeconds("cred_expire=99999999999999999999999", 5), 120 + 5 + 1);  // overflow
  EXPECT_EQ(PrologSkipWindowSeconds("cred_expire=9000000", 5), 7 * 24 * 3600 + 5 + 1);        // capped
}

TEST(RecentDepartures, AvoidsTheNodesLeftWithinTheWindowOnlyForThatJob) {
  RecentDepartures departures;
  departures.Left(7, {2, 3}, 1000);
  int64_t wait = -1;
  EXPECT_EQ(departures.Avoid(7, 1000, 16, &wait), (std::vector<NodeId>{2, 3}));
  EXPECT_EQ(wait, 16);
  EXPECT_EQ(departures.Avoid(7, 1015, 16, &wait), (std::vector<NodeId>{2, 3}));
  EXPECT_EQ(wait, 1);
  EXPECT_TRUE(departures.Avoid(7, 1016, 16, &wait).empty());
  EXPECT_EQ(wait, 0);
  EXPECT_TRUE(departures.Avoid(8, 1000, 16).empty());  // another job may use them
}

TEST(RecentDepartures, ALaterDepartureReplacesTheEarlierOne) {
  RecentDepartures departures;
  departures.Left(7, {2}, 1000);
  departures.Left(7, {5}, 1010);
  EXPECT_EQ(departures.Avoid(7, 1012, 16), (std::vector<NodeId>{5}));
  departures.Left(7, {}, 1013);  // no nodes (never started): nothing changes
  EXPECT_EQ(departures.Avoid(7, 1013, 16), (std::vector<NodeId>{5}));
}

TEST(RecentDepartures, PruneAndCapacityForgetTheOldestFirst) {
  RecentDepartures departures(/*max_jobs=*/10);
  for (uint32_t job = 1; job <= 10; ++job) departures.Left(job, {1}, 1000 + job);
  departures.Left(11, {1}, 2000);  // full: the oldest tenth (job 1) goes
  EXPECT_EQ(departures.size(), 10u);
  EXPECT_TRUE(departures.Avoid(1, 1002, 100).empty());
  EXPECT_FALSE(departures.Avoid(2, 1002, 100).empty());
  departures.Prune(/*now_s=*/1106, /*window_s=*/100);  // jobs 2..6 left at 1002..1006: gone
  EXPECT_EQ(departures.size(), 5u);
  EXPECT_FALSE(departures.Avoid(11, 2001, 100).empty());
}

}  // namespace
}  // namespace rackwise::slurm
