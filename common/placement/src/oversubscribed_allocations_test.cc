// The book of allocations counted oversubscribed: what it remembers, what a job counts after a restart (through the
// state file's text, as the faces save it), and what steering is told.
#include "rackwise/oversubscribed_allocations.h"

#include <gtest/gtest.h>

#include "rackwise/cluster_description.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise {
namespace {

OversubscribedWatts Applied(double counted, double declared) { return {true, counted, declared, ""}; }

TEST(OversubscribedAllocationsTest, RemembersOnlyWhatWasCountedBelowDeclared) {
  OversubscribedAllocations book;
  book.Placed("a", Applied(770, 962.5));
  book.Placed("b", {false, 0, 0, "oversubscription is off while telemetry is stale: jobs count their declared watts"});
  book.Placed("c", Applied(600, 600));  // a share that rounds to nothing
  ASSERT_EQ(book.size(), 1u);
  EXPECT_EQ(*book.Find("a"), (OversubscribedAllocation{962'500, 770'000}));
  EXPECT_TRUE(book.TakeChanged());
  EXPECT_FALSE(book.TakeChanged());
  book.Placed("a", Applied(770, 962.5));  // the same again: no change
  EXPECT_FALSE(book.TakeChanged());
  book.Placed("a", {false, 0, 0, ""});  // placed again, not counted at less this time
  EXPECT_EQ(book.Find("a"), nullptr);
  EXPECT_TRUE(book.TakeChanged());
}

TEST(OversubscribedAllocationsTest, CountedOnlyWhileTheJobStillDeclaresWhatItWasCountedFor) {
  OversubscribedAllocations book;
  book.Placed("a", Applied(480, 600));
  book.Placed("d", Applied(770, 962.5));  // declared nothing: its node type's default
  EXPECT_EQ(book.Counted("a", 600'000), 480'000);
  EXPECT_EQ(book.Counted("a", 700'000), 700'000);  // declares other watts now
  EXPECT_EQ(book.Counted("d", 0), 770'000);
  EXPECT_EQ(book.Counted("unknown", 0), 0);
  SteeringFacts facts;
  book.AddDeclaredTo(&facts);
  EXPECT_EQ(facts.declared.at("a"), 600'000);
  EXPECT_EQ(facts.declared.at("d"), 962'500);
  book.Retain([](const std::string& id) { return id == "d"; });
  EXPECT_EQ(book.Find("a"), nullptr);
  EXPECT_NE(book.Find("d"), nullptr);
}

TEST(OversubscribedAllocationsTest, ComesBackFromTheStateFileText) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({.system = ReferenceSystem::kHgxH100, .racks = 1, .nodes_per_rack = 2, .rack_cap_kw = 30});
  const v1::ClusterDescription description = BuildSyntheticCluster(spec);
  OversubscribedAllocations book;
  book.Placed("job2", Applied(480, 600));
  book.Placed("job1", Applied(770, 962.5));
  v1::ClusterState state;
  book.AddTo(&state);
  ASSERT_EQ(state.oversubscribed_size(), 2);
  EXPECT_EQ(state.oversubscribed(0).id(), "job1");  // sorted: the file does not churn
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterState> read =
      ParseClusterState(ClusterStateToYaml(state), "state", description, &diagnostics);
  ASSERT_TRUE(read.ok()) << read.status();
  OversubscribedAllocations restarted;
  restarted.Restore(*read);
  EXPECT_EQ(restarted.size(), 2u);
  EXPECT_EQ(restarted.Counted("job1", 0), 770'000);
  EXPECT_EQ(restarted.Find("job2")->declared, 600'000);
  EXPECT_FALSE(restarted.TakeChanged());  // nothing to save again
}

}  // namespace
}  // namespace rackwise
