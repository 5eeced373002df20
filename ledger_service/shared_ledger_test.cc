// SharedLedger against a fake store: the order check -> write -> commit, fencing, and reconcile diffing.
#include "shared_ledger.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "fake_store.h"
#include "rackwise/cluster_description.h"
#include "test_support.h"
#include "testdata_topology.h"

namespace rackwise::ledger {
namespace {

using testing::FakeStore;
using testing::MakeAllocation;
using testing::WholeNode;

class SharedLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Topology>> t = testing::TestdataTopology("two_racks.yaml");
    ASSERT_TRUE(t.ok()) << t.status();
    topology_ = std::move(*t);
    ledger_ = std::make_unique<SharedLedger>(topology_.get(), &store_);
  }
  void Lead() { ASSERT_TRUE(ledger_->TakeOver(SharedLedger::Clock::now() + std::chrono::hours(1)).ok()); }
  std::vector<std::string> Owners(const std::string& prefix = "") {
    std::vector<std::string> out;
    absl::StatusOr<std::vector<v1::Allocation>> held = ledger_->List(prefix);
    EXPECT_TRUE(held.ok()) << held.status();
    for (const v1::Allocation& a : *held) out.push_back(a.id());
    return out;
  }
  std::vector<std::string> StoredOwners() {
    std::vector<std::string> out;
    for (const auto& [owner, value] : store_.data) out.push_back(owner);
    return out;
  }

  FakeStore store_;
  std::unique_ptr<Topology> topology_;
  std::unique_ptr<SharedLedger> ledger_;
};

TEST_F(SharedLedgerTest, ReservesWithinCapsAndRefusesOverCapNamingTheRack) {
  Lead();
  EXPECT_TRUE(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).ok());
  EXPECT_TRUE(ledger_->Reserve(WholeNode("k8s/ns/pod-a", "n2")).ok());
  absl::Status over = ledger_->Reserve(WholeNode("slurm/c1/2", "n3"));
  EXPECT_EQ(over.code(), absl::StatusCode::kFailedPrecondition) << over;
  EXPECT_NE(over.message().find("r1"), std::string::npos) << over;
  EXPECT_EQ(Owners(), (std::vector<std::string>{"k8s/ns/pod-a", "slurm/c1/1"}));
  EXPECT_EQ(StoredOwners(), Owners());
  // The other rack still has room.
  EXPECT_TRUE(ledger_->Reserve(WholeNode("slurm/c1/2", "n5")).ok());
}

TEST_F(SharedLedgerTest, AGpuIsNeverGivenTwice) {
  Lead();
  ASSERT_TRUE(ledger_->Reserve(MakeAllocation("slurm/c1/1", "n1", {0, 1})).ok());
  EXPECT_FALSE(ledger_->Reserve(MakeAllocation("k8s/ns/p", "n1", {1})).ok());
  EXPECT_EQ(store_.data.size(), 1u);
}

TEST_F(SharedLedgerTest, AFencedOutWriteChangesNothing) {
  Lead();
  ASSERT_TRUE(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).ok());
  store_.fenced_out = true;
  EXPECT_EQ(ledger_->Reserve(WholeNode("slurm/c1/2", "n5")).code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(ledger_->Release("slurm/c1/1").ok());
  EXPECT_FALSE(ledger_->Reconcile("slurm/c1/", {}).ok());
  EXPECT_EQ(Owners(), (std::vector<std::string>{"slurm/c1/1"}));
  // And the GPUs the refused reservation asked for are still free once the fence lifts.
  store_.fenced_out = false;
  EXPECT_TRUE(ledger_->Reserve(WholeNode("k8s/ns/p", "n5")).ok());
}

TEST_F(SharedLedgerTest, OnlyALiveLeaderServes) {
  EXPECT_EQ(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(ledger_->TakeOver(SharedLedger::Clock::now() - std::chrono::milliseconds(1)).ok());
  EXPECT_FALSE(ledger_->serving()) << "a lease whose deadline passed must not serve";
  EXPECT_EQ(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).code(), absl::StatusCode::kUnavailable);
  Lead();
  EXPECT_TRUE(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).ok());
  ledger_->StopServing();
  EXPECT_FALSE(ledger_->List("").ok());
  EXPECT_EQ(store_.data.size(), 1u);
}

TEST_F(SharedLedgerTest, SameOwnerSameContentIsANoOpOtherContentIsRefused) {
  Lead();
  ASSERT_TRUE(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).ok());
  const int writes = store_.write_calls;
  EXPECT_TRUE(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).ok());
  EXPECT_EQ(store_.write_calls, writes);
  EXPECT_EQ(ledger_->Reserve(WholeNode("slurm/c1/1", "n2")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ledger_->Reserve(WholeNode("slurm/c1", "n2")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ledger_->Reserve(WholeNode("slurm/c1/9", "nope")).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SharedLedgerTest, ReleaseFreesTheRoomAndTheStoredKey) {
  Lead();
  ASSERT_TRUE(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).ok());
  ASSERT_TRUE(ledger_->Reserve(WholeNode("slurm/c1/2", "n2")).ok());
  EXPECT_EQ(*ledger_->Release("slurm/c1/1"), true);
  EXPECT_EQ(*ledger_->Release("slurm/c1/1"), false);
  EXPECT_EQ(StoredOwners(), (std::vector<std::string>{"slurm/c1/2"}));
  EXPECT_TRUE(ledger_->Reserve(WholeNode("k8s/ns/p", "n3")).ok());
}

TEST_F(SharedLedgerTest, TakeOverLoadsEverythingStoredEvenOverACap) {
  Lead();
  ASSERT_TRUE(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).ok());
  ASSERT_TRUE(ledger_->Reserve(WholeNode("k8s/ns/p", "n2")).ok());
  // Written by an earlier leader whose caps were higher: recorded all the same, it runs.
  store_.data["slurm/c1/3"] = WholeNode("slurm/c1/3", "n3").SerializeAsString();
  SharedLedger successor(topology_.get(), &store_);
  ASSERT_TRUE(successor.TakeOver(SharedLedger::Clock::now() + std::chrono::hours(1)).ok());
  EXPECT_EQ(successor.allocation_count(), 3u);
  EXPECT_EQ(successor.Reserve(WholeNode("slurm/c1/4", "n4")).code(), absl::StatusCode::kFailedPrecondition);

  store_.data["k8s/ns/q"] = WholeNode("k8s/ns/other-id", "n6").SerializeAsString();
  SharedLedger refuses(topology_.get(), &store_);
  EXPECT_EQ(refuses.TakeOver(SharedLedger::Clock::now() + std::chrono::hours(1)).code(), absl::StatusCode::kDataLoss);
}

TEST_F(SharedLedgerTest, ReconcileTwiceChangesNothingTheSecondTime) {
  Lead();
  std::vector<v1::Allocation> list;
  for (int i = 0; i < 10; ++i) list.push_back(MakeAllocation(absl::StrCat("slurm/c1/", i), "n5", {uint32_t(i % 8)}));
  list.resize(8);  // eight GPUs of n5
  absl::StatusOr<ReconcileOutcome> first = ledger_->Reconcile("slurm/c1/", list);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->added, 8u);
  EXPECT_GE(store_.write_calls, 2) << "8 writes with 4 per call need two calls";
  const int writes = store_.write_calls;
  const std::map<std::string, std::string> stored = store_.data;
  absl::StatusOr<ReconcileOutcome> second = ledger_->Reconcile("slurm/c1/", list);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->unchanged, 8u);
  EXPECT_EQ(second->added + second->replaced + second->released, 0u);
  EXPECT_EQ(store_.write_calls, writes);
  EXPECT_EQ(store_.data, stored);
  EXPECT_EQ(ledger_->DrawByOwner()[1].slurm, 8'000'000);
}

TEST_F(SharedLedgerTest, ReconcileDropsWhatIsNoLongerListedAndOnlyUnderItsPrefix) {
  Lead();
  ASSERT_TRUE(ledger_->Reserve(WholeNode("k8s/ns/p", "n1")).ok());
  ASSERT_TRUE(ledger_->Reserve(WholeNode("slurm/c2/7", "n2")).ok());
  ASSERT_TRUE(ledger_->Reconcile("slurm/c1/", {WholeNode("slurm/c1/1", "n5"), WholeNode("slurm/c1/2", "n6")}).ok());
  absl::StatusOr<ReconcileOutcome> r =
      ledger_->Reconcile("slurm/c1/", {MakeAllocation("slurm/c1/2", "n6", {0}), WholeNode("slurm/c1/3", "n7")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->released, 1u);
  EXPECT_EQ(r->replaced, 1u);
  EXPECT_EQ(r->added, 1u);
  EXPECT_EQ(Owners(), (std::vector<std::string>{"k8s/ns/p", "slurm/c1/2", "slurm/c1/3", "slurm/c2/7"}));
  EXPECT_EQ(StoredOwners(), Owners());
  ASSERT_TRUE(ledger_->Reconcile("slurm/c1/", {}).ok());
  EXPECT_EQ(Owners(), (std::vector<std::string>{"k8s/ns/p", "slurm/c2/7"}));
}

TEST_F(SharedLedgerTest, ReconcileRecordsRunningWorkOverACapButNeverAGpuTwice) {
  Lead();
  ASSERT_TRUE(ledger_->Reserve(MakeAllocation("k8s/ns/p", "n1", {0})).ok());
  absl::StatusOr<ReconcileOutcome> r = ledger_->Reconcile(
      "slurm/c1/", {WholeNode("slurm/c1/1", "n2"), WholeNode("slurm/c1/2", "n3"), WholeNode("slurm/c1/3", "n4"),
                    MakeAllocation("slurm/c1/4", "n1", {0, 1}), MakeAllocation("slurm/c1/5", "n99", {0})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->added, 3u) << "three whole nodes run already: recorded over r1's cap";
  ASSERT_EQ(r->refused.size(), 2u);
  EXPECT_NE(r->refused[0].find("slurm/c1/5"), std::string::npos);  // refused before the diff (unknown node)
  EXPECT_NE(r->refused[1].find("slurm/c1/4"), std::string::npos);  // GPU 0 of n1 is k8s/ns/p's
  EXPECT_EQ(StoredOwners(), Owners());
}

TEST_F(SharedLedgerTest, ReconcileRefusesABadListWhole) {
  Lead();
  EXPECT_EQ(ledger_->Reconcile("slurm/c1", {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ledger_->Reconcile("slurm/c1/", {WholeNode("k8s/ns/p", "n1")}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ledger_->Reconcile("slurm/c1/", {WholeNode("slurm/c1/1", "n1"), WholeNode("slurm/c1/1", "n2")}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store_.data.empty());
}

TEST_F(SharedLedgerTest, AFailedBatchLeavesMemoryEqualToTheStore) {
  Lead();
  ASSERT_TRUE(ledger_->Reserve(WholeNode("slurm/c1/old", "n8")).ok());
  std::vector<v1::Allocation> list;
  for (uint32_t g = 0; g < 8; ++g) list.push_back(MakeAllocation(absl::StrCat("slurm/c1/", g), "n5", {g}));
  store_.fail_write = store_.write_calls + 2;  // the release succeeds, the first batch of 4 too, the second fails
  EXPECT_EQ(ledger_->Reconcile("slurm/c1/", list).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(StoredOwners(), Owners());
  EXPECT_EQ(store_.data.size(), 4u);
  absl::StatusOr<ReconcileOutcome> again = ledger_->Reconcile("slurm/c1/", list);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->added, 4u);
  EXPECT_EQ(again->unchanged, 4u);
  EXPECT_EQ(StoredOwners(), Owners());
}

TEST_F(SharedLedgerTest, DrawIsSplitByOwnerKind) {
  Lead();
  ASSERT_TRUE(ledger_->Reserve(MakeAllocation("slurm/c1/1", "n1", {0, 1})).ok());
  ASSERT_TRUE(ledger_->Reserve(MakeAllocation("k8s/ns/p", "n1", {2})).ok());
  ASSERT_TRUE(ledger_->Reserve(MakeAllocation("maint/burn", "n5", {2})).ok());
  std::vector<RackDrawByOwner> draw = ledger_->DrawByOwner();
  ASSERT_EQ(draw.size(), 2u);
  EXPECT_EQ(draw[0].rack, "r1");
  EXPECT_EQ(draw[0].idle, 8'000'000);
  EXPECT_EQ(draw[0].slurm, 2'000'000);
  EXPECT_EQ(draw[0].k8s, 1'000'000);
  EXPECT_EQ(draw[1].other, 1'000'000);
}

// The guaranteed-slice rule on two_racks.yaml: each rack has a 16 kW budget (24 kW less 8 kW idle) of 1 kW GPUs;
// Slurm's slice is a quarter (4 GPUs), Kubernetes's a half (8).
class SharedLedgerSlicesTest : public SharedLedgerTest {
 protected:
  void SetUp() override {
    SharedLedgerTest::SetUp();
    auto slices = GuaranteedSlices::Create(*topology_, {{"slurm/c1/", 0.25}, {"k8s/", 0.5}});
    ASSERT_TRUE(slices.ok()) << slices.status();
    ledger_ = std::make_unique<SharedLedger>(topology_.get(), &store_, *std::move(slices));
    Lead();
  }
};

TEST_F(SharedLedgerSlicesTest, AnOwnerBorrowsAllButTheOthersUnusedSlices) {
  // Slurm holds nothing: Kubernetes may take 16 - 4 = 12 GPUs of r1, not 13.
  ASSERT_TRUE(ledger_->Reserve(WholeNode("k8s/ns/a", "n1")).ok());
  ASSERT_TRUE(ledger_->Reserve(MakeAllocation("k8s/ns/b", "n2", {0, 1, 2, 3})).ok());
  absl::Status refused = ledger_->Reserve(MakeAllocation("k8s/ns/c", "n2", {4}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("rack 'r1'"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("4000 W more is kept free for their guaranteed slices"), std::string::npos)
      << refused;
  EXPECT_EQ(store_.data.count("k8s/ns/c"), 0u);
  // Slurm's slice is there for it.
  EXPECT_TRUE(ledger_->Reserve(MakeAllocation("slurm/c1/1", "n3", {0, 1, 2, 3})).ok());
  // The other rack is untouched: Kubernetes borrows there too.
  EXPECT_TRUE(ledger_->Reserve(MakeAllocation("k8s/ns/d", "n5", {0, 1, 2, 3, 4, 5, 6, 7})).ok());
}

TEST_F(SharedLedgerSlicesTest, ReconcileRecordsPastTheRuleAndARestartRecountsIt) {
  // A face back from its fallback lists 13 GPUs of r1 (it ran them): recorded, as work already running.
  const std::vector<v1::Allocation> listed = {WholeNode("k8s/ns/a", "n1"),
                                              MakeAllocation("k8s/ns/b", "n2", {0, 1, 2, 3, 4})};
  absl::StatusOr<ReconcileOutcome> outcome = ledger_->Reconcile("k8s/", listed);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->added, 2u);
  EXPECT_TRUE(outcome->refused.empty());
  // 13 + Slurm's unused 4 > 16: nothing more on r1, for anyone, until it falls back under.
  EXPECT_FALSE(ledger_->Reserve(MakeAllocation("slurm/c1/1", "n3", {0})).ok());
  EXPECT_FALSE(ledger_->Reserve(MakeAllocation("k8s/ns/c", "n3", {0})).ok());
  // A replica taking over loads it and counts the same.
  Lead();
  EXPECT_FALSE(ledger_->Reserve(MakeAllocation("slurm/c1/1", "n3", {0})).ok());
  ASSERT_TRUE(*ledger_->Release("k8s/ns/b"));
  EXPECT_TRUE(ledger_->Reserve(MakeAllocation("slurm/c1/1", "n3", {0, 1, 2, 3})).ok());
}

}  // namespace
}  // namespace rackwise::ledger
