// SharedLedger against a fake store: the order check -> write -> commit, fencing, and reconcile diffing.
#include "shared_ledger.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "rackwise/cluster_description.h"
#include "test_support.h"

namespace rackwise::ledger {
namespace {

using testing::MakeAllocation;
using testing::WholeNode;

// Keeps what it is given in a map; can be fenced out (as a deposed leader is) or made to fail one write.
class FakeStore : public LedgerStore {
 public:
  absl::StatusOr<std::vector<StoredAllocation>> LoadAll() override {
    std::vector<StoredAllocation> out;
    for (const auto& [owner, value] : data) out.push_back({owner, value});
    return out;
  }
  absl::Status Write(absl::Span<const StoreWrite> writes) override {
    if (fenced_out) return absl::FailedPreconditionError("fenced: another replica leads");
    if (writes.size() > max_writes) return absl::InvalidArgumentError("too many writes in one call");
    if (fail_write == write_calls++) return absl::UnavailableError("etcd unreachable");
    for (const StoreWrite& w : writes) {
      if (w.value) {
        data[w.owner] = *w.value;
      } else {
        data.erase(w.owner);
      }
    }
    return absl::OkStatus();
  }
  size_t max_writes_per_call() const override { return max_writes; }

  std::map<std::string, std::string> data;
  bool fenced_out = false;
  size_t max_writes = 4;
  int write_calls = 0;
  int fail_write = -1;  // the index of the call to fail
};

class SharedLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Diagnostics diagnostics;
    absl::StatusOr<v1::ClusterDescription> d =
        LoadClusterDescription(std::string(RACKWISE_LEDGER_TESTDATA) + "/two_racks.yaml", &diagnostics);
    ASSERT_TRUE(d.ok()) << d.status();
    absl::StatusOr<Topology> t = Topology::Build(*d);
    ASSERT_TRUE(t.ok()) << t.status();
    topology_ = std::make_unique<Topology>(std::move(*t));
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
  EXPECT_EQ(ledger_->Reserve(WholeNode("slurm/c1/2", "n5")).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(ledger_->Release("slurm/c1/1").ok());
  EXPECT_FALSE(ledger_->Reconcile("slurm/c1/", {}).ok());
  EXPECT_EQ(Owners(), (std::vector<std::string>{"slurm/c1/1"}));
  // And the GPUs the refused reservation asked for are still free once the fence lifts.
  store_.fenced_out = false;
  EXPECT_TRUE(ledger_->Reserve(WholeNode("k8s/ns/p", "n5")).ok());
}

TEST_F(SharedLedgerTest, OnlyALiveLeaderServes) {
  EXPECT_EQ(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(ledger_->TakeOver(SharedLedger::Clock::now() - std::chrono::milliseconds(1)).ok());
  EXPECT_FALSE(ledger_->serving()) << "a lease whose deadline passed must not serve";
  EXPECT_EQ(ledger_->Reserve(WholeNode("slurm/c1/1", "n1")).code(), absl::StatusCode::kFailedPrecondition);
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

}  // namespace
}  // namespace rackwise::ledger
