// A group whose pods do not come holds no room for long: a lone pod of an 18-node ComputeDomain (the channel
// template names numNodes pods that were never created) reserves a whole NVL72 rack at its first filter, but the
// 17 free slots go once no other pod of the domain has been seen for the arrival window, well before the TTL; and
// another group whose whole plan needs that rack gets it once the lone group has been quiet for a third of it.
#include <gtest/gtest.h>

#include "dra_test_objects.h"
#include "extender_service.h"
#include "extender_test_support.h"

namespace rackwise::k8s {
namespace {

using testing::DraPodJson;

std::vector<std::string> RackNodes(const ExtenderService& s, RackId rack) {
  std::vector<std::string> names;
  for (const Node& n : s.topology().nodes()) {
    if (n.rack == rack) names.push_back(n.name);
  }
  return names;
}

ExtenderArgs ArgsOver(const Json& pod, std::vector<std::string> names) {
  ExtenderArgs args;
  args.pod = pod;
  args.SetNodeNames(std::move(names));
  return args;
}

size_t Allocations(const ExtenderService& s) {
  return s.WithLedger([](const Ledger& l) { return l.allocation_count(); });
}

// The first NVL72 rack (rack 2) is the only candidate. ComputeDomain "lone" wants 18 pods of 4 GPUs (the whole
// rack), "half" 9.
class GangArrivalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_ = testing::NewTestService(&metrics_);
    ASSERT_EQ(ExtenderOptions{}.reservation_ttl_ms, 120'000);
    testing::ApplyComputeDomainObjects(*service_, "lone", 18, "lone-channel");
    ASSERT_TRUE(
        service_
            ->ApplyDraObject(DraKind::kComputeDomain, testing::ComputeDomainJson("half", 9, "half-channel"), false, 0)
            .ok());
    rack_ = RackNodes(*service_, 2);
    ASSERT_EQ(rack_.size(), 18u);
  }
  // The lone domain's only pod: filtered at t=1 s (its group reserves all 18 trays) and bound at 1.1 s.
  void LonePodRuns() {
    const FilterResult f = service_->Filter(ArgsOver(DraPodJson("lone-0", {"gpu4", "lone-channel"}), rack_), 1'000);
    ASSERT_FALSE(f.feasible.empty()) << (f.reasons.empty() ? f.error : f.reasons[0]);
    ASSERT_EQ(service_->Bind(testing::BindingOf("lone-0", rack_[f.feasible[0]]), 1'100), "");
    ASSERT_EQ(Allocations(*service_), 18u);  // its slot, and 17 free ones
  }

  ExtenderMetrics metrics_;
  std::unique_ptr<ExtenderService> service_;
  std::vector<std::string> rack_;
};

TEST_F(GangArrivalTest, AGroupWhosePodsDoNotComeLosesItsFreeSlotsAfterTheArrivalWindow) {
  LonePodRuns();
  EXPECT_EQ(service_->ExpireReservations(1'100 + 29'000), 0);  // within the window of the bind: held
  EXPECT_EQ(Allocations(*service_), 18u);
  EXPECT_EQ(service_->ExpireReservations(1'100 + 30'000), 17);  // 30 s without a new pod: the free slots go
  EXPECT_EQ(Allocations(*service_), 1u);                        // the running pod keeps its GPUs
  // A late pod of the domain plans its missing slots again.
  const FilterResult late = service_->Filter(ArgsOver(DraPodJson("lone-1", {"gpu4", "lone-channel"}), rack_), 40'000);
  EXPECT_FALSE(late.feasible.empty());
  EXPECT_EQ(Allocations(*service_), 18u);
  EXPECT_TRUE(service_->CheckInvariants().ok());
}

TEST_F(GangArrivalTest, PodsThatKeepComingKeepTheirSlots) {
  LonePodRuns();
  // A new pod every 20 s: each restarts the window, so nothing is released before the TTL.
  for (int i = 1; i <= 4; ++i) {
    const int64_t t = 1'000 + 20'000 * i;
    const std::string name = "lone-" + std::to_string(i);
    const FilterResult f = service_->Filter(ArgsOver(DraPodJson(name, {"gpu4", "lone-channel"}), rack_), t);
    ASSERT_FALSE(f.feasible.empty()) << name;
    EXPECT_EQ(Allocations(*service_), 18u) << name;
  }
}

TEST_F(GangArrivalTest, AQuietIncompleteGroupYieldsToAnotherGroupsWholePlan) {
  LonePodRuns();
  // 5 s later the half domain's first pod finds the rack reserved: the lone group is not yet quiet for 10 s.
  FilterResult early = service_->Filter(ArgsOver(DraPodJson("half-0", {"gpu4", "half-channel"}), rack_), 6'000);
  EXPECT_TRUE(early.feasible.empty());
  EXPECT_EQ(Allocations(*service_), 18u);
  // 11 s after the lone pod: the lone group yields its 17 free slots and the half domain reserves 9 trays beside
  // the lone pod, which keeps its own.
  FilterResult later = service_->Filter(ArgsOver(DraPodJson("half-1", {"gpu4", "half-channel"}), rack_), 12'000);
  EXPECT_FALSE(later.feasible.empty()) << (later.reasons.empty() ? later.error : later.reasons[0]);
  EXPECT_EQ(Allocations(*service_), 1u + 9u);
  EXPECT_TRUE(service_->CheckInvariants().ok());
}

}  // namespace
}  // namespace rackwise::k8s
