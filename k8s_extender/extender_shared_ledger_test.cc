// The extender service as a client of a shared power ledger, against a fake gate that counts owners: binds
// and gang slots are reserved through it before they count locally, its refusal refuses (naming it), pod
// deletion and gang expiry release through it, a fallback shows in filter reasons and /metrics, and the sync
// after a fallback lists exactly what the extender holds. (The real gate over a real rackwise-ledger daemon:
// ledger_service/etcd_extender_test.cc.)
#include <gtest/gtest.h>

#include <set>

#include "extender_service.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise::k8s {
namespace {

// A shared ledger that admits at most `capacity` owners, reachable or not. In fallback it commits locally
// within the extender's ledger (its caps stand for the slice), as LedgerLink does.
class FakeGate : public ledger::LedgerBooking {
 public:
  absl::Status ReserveAndCommit(Ledger& local, const std::string& owner, const Allocation& a) override {
    if (Reach() && held.size() >= capacity)
      return absl::FailedPreconditionError("the power ledger refused: another owner holds the room");
    if (!fallback) held.insert(owner);
    if (absl::Status s = local.Commit(a); !s.ok()) {
      held.erase(owner);
      return s;
    }
    return absl::OkStatus();
  }
  void Release(Ledger& local, const std::string& owner, const std::string& local_id) override {
    if (!local_id.empty()) local.Release(local_id);
    if (Reach()) held.erase(owner);
  }
  absl::Status Sync(Ledger&, absl::Span<const ledger::OwnAllocation> own, bool reconcile) override {
    ++syncs;
    if (!reachable) {
      Reach();  // enters fallback
      return absl::UnavailableError("connection refused");
    }
    if (fallback || reconcile) {  // reconcile: the shared ledger now holds exactly the extender's list
      held.clear();
      for (const ledger::OwnAllocation& o : own) held.insert(o.owner);
      fallback = false;
    }
    return absl::OkStatus();
  }
  bool in_fallback() const override { return fallback; }
  std::string fallback_reason() const override { return fallback ? "connection refused" : ""; }
  uint64_t fallbacks() const override { return fallback_count; }

  bool reachable = true;
  bool fallback = false;
  size_t capacity = 1'000;
  uint64_t fallback_count = 0;
  int syncs = 0;
  std::set<std::string> held;

 private:
  // Whether a call reaches the ledger now; the first miss enters fallback, as the link does.
  bool Reach() {
    if (reachable) return !fallback;
    if (!fallback) ++fallback_count;
    fallback = true;
    return false;
  }
};

struct Fixture {
  Fixture() {
    SyntheticClusterSpec spec;
    spec.name = "shared";
    spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 30.0});
    spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 1, 18});  // 4-GPU trays: a reason for an 8-GPU pod
    auto t = Topology::Build(BuildSyntheticCluster(spec));
    EXPECT_TRUE(t.ok()) << t.status();
    service = std::make_unique<ExtenderService>(std::make_unique<Topology>(std::move(*t)), ExtenderOptions{}, nullptr,
                                                &metrics);
    service->SetSharedLedger(&gate);
    service->SetSynced(true);
  }
  ExtenderArgs Args(const std::string& name, int gpus, Json annotations = Json::object()) const {
    ExtenderArgs args;
    args.pod = {
        {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}, {"annotations", annotations}}},
        {"spec", {{"containers", {{{"name", "main"}, {"resources", {{"limits", {{kGpuResource, gpus}}}}}}}}}},
        {"status", {{"phase", "Pending"}}}};
    std::vector<std::string> names;
    for (const Node& n : service->topology().nodes()) names.push_back(n.name);
    args.SetNodeNames(std::move(names));
    return args;
  }
  // Filters then binds to the first feasible node; returns the bind's answer.
  std::string FilterAndBind(const std::string& name, int gpus, int64_t now) {
    const ExtenderArgs args = Args(name, gpus);
    const FilterResult f = service->Filter(args, now);
    if (f.feasible.empty()) return "no feasible node";
    return service->Bind({name, "ml", "uid-" + name, service->topology().nodes()[f.feasible[0]].name}, now);
  }
  std::set<std::string> OwnOwners() const {
    std::set<std::string> out;
    for (const ledger::OwnAllocation& o : service->OwnAllocations()) out.insert(o.owner);
    return out;
  }

  ExtenderMetrics metrics;
  FakeGate gate;
  std::unique_ptr<ExtenderService> service;
};

Json Group(const std::string& name, int size) { return {{kGroupKey, name}, {kGroupSizeKey, std::to_string(size)}}; }

TEST(ExtenderSharedLedgerTest, BindReservesThroughTheGateAndDeletionReleases) {
  Fixture f;
  ASSERT_EQ(f.FilterAndBind("a", 2, 1'000), "");
  EXPECT_EQ(f.gate.held, std::set<std::string>{"k8s/ml/uid-a"});
  PodInfo pod;
  pod.namespace_ = "ml";
  pod.name = "a";
  pod.uid = "uid-a";
  f.service->DeletePod(pod);
  EXPECT_TRUE(f.gate.held.empty());
  EXPECT_EQ(f.service->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 0u);
}

TEST(ExtenderSharedLedgerTest, ARefusalBySharedLedgerRefusesTheBindAndNamesIt) {
  Fixture f;
  f.gate.capacity = 0;
  const std::string refused = f.FilterAndBind("a", 2, 1'000);
  EXPECT_NE(refused.find("power ledger refused"), std::string::npos) << refused;
  EXPECT_EQ(f.service->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 0u);
}

TEST(ExtenderSharedLedgerTest, GangSlotsAreReservedAtFilterTimeAndReleasedOnExpiry) {
  Fixture f;
  const FilterResult r = f.service->Filter(f.Args("w0", 4, Group("g", 2)), 1'000);
  ASSERT_FALSE(r.feasible.empty()) << r.error;
  EXPECT_EQ(f.gate.held, (std::set<std::string>{"k8s/ml/group:g#0", "k8s/ml/group:g#1"}));
  EXPECT_EQ(f.service->ExpireReservations(1'000 + ExtenderOptions{}.reservation_ttl_ms + 1), 2);
  EXPECT_TRUE(f.gate.held.empty());
}

TEST(ExtenderSharedLedgerTest, AGangTheSharedLedgerRefusesWaitsWithItsReasonAndHoldsNothing) {
  Fixture f;
  f.gate.capacity = 1;  // the first slot is admitted, the second refused: the first is given back
  const FilterResult r = f.service->Filter(f.Args("w0", 4, Group("g", 2)), 1'000);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(r.feasible.empty());
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_NE(r.reasons[0].find("power ledger refused"), std::string::npos) << r.reasons[0];
  EXPECT_TRUE(f.gate.held.empty());
  EXPECT_EQ(f.service->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 0u);
}

TEST(ExtenderSharedLedgerTest, FallbackShowsInFilterReasonsAndMetrics) {
  Fixture f;
  f.gate.reachable = false;
  f.service->SyncSharedLedger(10'000);
  ASSERT_TRUE(f.gate.in_fallback());
  const FilterResult r = f.service->Filter(f.Args("big", 8), 10'000);  // the 4-GPU trays cannot take it
  ASSERT_FALSE(r.reasons.empty());
  for (const std::string& reason : r.reasons)
    EXPECT_NE(reason.find("shared power ledger unreachable"), std::string::npos) << reason;
  std::string metrics;
  f.service->RenderStateMetrics(&metrics);
  EXPECT_NE(metrics.find("rackwise_ledger_fallback 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("rackwise_ledger_fallbacks_total 1\n"), std::string::npos);
}

TEST(ExtenderSharedLedgerTest, OnReturnTheWholeListIsReconciledOnce) {
  Fixture f;
  ASSERT_EQ(f.FilterAndBind("before", 2, 1'000), "");
  f.gate.reachable = false;
  ASSERT_EQ(f.FilterAndBind("during", 2, 2'000), "");  // within the slice, while cut off
  PodInfo gone;
  gone.namespace_ = "ml";
  gone.name = "before";
  gone.uid = "uid-before";
  f.service->DeletePod(gone);  // released while cut off: the reconcile releases it there
  ASSERT_FALSE(f.service->Filter(f.Args("w0", 4, Group("g", 2)), 3'000).feasible.empty());
  f.gate.reachable = true;
  f.service->SyncSharedLedger(3'000 + ExtenderOptions{}.ledger_sync_ms);
  EXPECT_FALSE(f.gate.in_fallback());
  EXPECT_EQ(f.gate.held, f.OwnOwners());
  EXPECT_EQ(f.gate.held, (std::set<std::string>{"k8s/ml/uid-during", "k8s/ml/group:g#0", "k8s/ml/group:g#1"}));
}

TEST(ExtenderSharedLedgerTest, ARelistReconcilesTheWholeListOnTheNextBeat) {
  Fixture f;
  ASSERT_EQ(f.FilterAndBind("a", 2, 1'000), "");
  f.gate.held.insert("k8s/ml/uid-gone");  // deleted while the watch was down: only the relist knows
  PodInfo a;
  a.namespace_ = "ml";
  a.name = "a";
  a.uid = "uid-a";
  a.gpus = 2;
  a.phase = "Running";
  a.node_name = f.service->NodeOfPod("ml/a").value_or("");
  f.service->ReplacePods({a}, 2'000);
  f.service->SyncSharedLedger(2'000);
  EXPECT_EQ(f.gate.held, f.OwnOwners());
  EXPECT_EQ(f.gate.held, std::set<std::string>{"k8s/ml/uid-a"});
}

TEST(ExtenderSharedLedgerTest, SyncsAreRateLimitedToTheBeat) {
  Fixture f;
  const int after_synced = f.gate.syncs;  // SetSynced(true) synced once
  EXPECT_EQ(after_synced, 1);
  f.service->SyncSharedLedger(1);
  f.service->SyncSharedLedger(2);
  EXPECT_EQ(f.gate.syncs, after_synced);
  f.service->SyncSharedLedger(ExtenderOptions{}.ledger_sync_ms);
  EXPECT_EQ(f.gate.syncs, after_synced + 1);
}

TEST(ExtenderSharedLedgerTest, GangSlotOwnersHaveThreeSegments) {
  EXPECT_EQ(GangSlotOwner("ml/jobset/js/workers#3"), "k8s/ml/jobset:js:workers#3");
  EXPECT_EQ(PodOwner("ml/a", "u-1"), "k8s/ml/u-1");
  EXPECT_EQ(PodOwner("ml/a", ""), "k8s/ml/a");
  EXPECT_EQ(OperatorOwner("train-7"), "k8s/_operator/train-7");
  EXPECT_EQ(OperatorOwner("team/run 1"), "k8s/_operator/team%2Frun%201");
}

// An operator's placement over gRPC draws from the same racks: the shared ledger books it like a bind, its
// refusal refuses the placement, Release gives it back, and the reconcile lists it with the pods.
TEST(ExtenderSharedLedgerTest, OperatorPlacementsGoThroughTheSharedLedger) {
  Fixture f;
  PlacementRequest r;
  r.id = "team/run 1";
  r.gpus = 8;
  r.gpus_per_node = 8;
  absl::StatusOr<PlacementOutcome> placed = f.service->Place(r, /*commit=*/true);
  ASSERT_TRUE(placed.ok()) << placed.status();
  ASSERT_TRUE(std::holds_alternative<PlacementDecision>(*placed));
  EXPECT_EQ(f.gate.held, std::set<std::string>{"k8s/_operator/team%2Frun%201"});
  EXPECT_EQ(f.OwnOwners(), std::set<std::string>{"k8s/_operator/team%2Frun%201"});

  f.gate.capacity = 1;  // the shared ledger's room is taken: a second placement is refused, nothing held for it
  r.id = "op-2";
  placed = f.service->Place(r, /*commit=*/true);
  EXPECT_EQ(placed.status().code(), absl::StatusCode::kFailedPrecondition) << placed.status();
  EXPECT_NE(placed.status().message().find("power ledger"), std::string::npos) << placed.status();
  EXPECT_FALSE(f.service->WithLedger([](const Ledger& l) { return l.Find("op-2") != nullptr; }));

  EXPECT_TRUE(f.service->Release("team/run 1"));
  EXPECT_TRUE(f.gate.held.empty());
  EXPECT_TRUE(f.OwnOwners().empty());
}

}  // namespace
}  // namespace rackwise::k8s
