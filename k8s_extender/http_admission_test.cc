#include "http_admission.h"

#include <vector>

#include <gtest/gtest.h>

namespace rackwise::k8s {
namespace {

struct FakeConnection : Sheddable {
  void Shed() override { ++shed; }
  int shed = 0;
};

TEST(ConnectionSlotsTest, ShedsTheLongestIdleThenRefusesWhenAllAreBusy) {
  ConnectionSlots slots(3);
  std::vector<std::shared_ptr<FakeConnection>> c;
  std::vector<uint64_t> id;
  for (int i = 0; i < 3; ++i) {
    c.push_back(std::make_shared<FakeConnection>());
    id.push_back(slots.Admit(c.back()));
    ASSERT_NE(id.back(), 0u);
  }
  slots.SetIdle(id[2], true);  // idle first: idle longest
  slots.SetIdle(id[1], true);
  auto newcomer = std::make_shared<FakeConnection>();
  uint64_t n = slots.Admit(newcomer);
  EXPECT_NE(n, 0u);
  EXPECT_EQ(c[2]->shed, 1);
  EXPECT_EQ(c[1]->shed, 0);
  EXPECT_EQ(slots.open(), 3u);
  slots.Leave(id[2]);  // the shed connection closes later: no effect on the count
  EXPECT_EQ(slots.open(), 3u);
  slots.SetIdle(id[1], false);  // busy again
  EXPECT_EQ(slots.Admit(std::make_shared<FakeConnection>()), 0u);
  EXPECT_EQ(slots.refused(), 1u);
  EXPECT_EQ(slots.shed(), 1u);
  slots.Leave(n);
  EXPECT_NE(slots.Admit(std::make_shared<FakeConnection>()), 0u);
}

TEST(BodyBudgetTest, WaitersAreGrantedInOrderAsBytesComeBack) {
  BodyBudget budget(100);
  std::vector<int> granted;
  EXPECT_TRUE(budget.Acquire(60, 1, [] {}));
  EXPECT_FALSE(budget.Acquire(50, 2, [&] { granted.push_back(2); }));
  // A small request behind a waiting large one waits too: the large one is not starved.
  EXPECT_FALSE(budget.Acquire(10, 3, [&] { granted.push_back(3); }));
  EXPECT_FALSE(budget.Acquire(500, 4, [&] { granted.push_back(4); }));  // clamped to the whole budget
  EXPECT_EQ(budget.waiting(), 3u);
  budget.Release(60);
  EXPECT_EQ(granted, (std::vector<int>{2, 3}));
  EXPECT_EQ(budget.in_use(), 60u);
  EXPECT_TRUE(budget.Withdraw(4));
  EXPECT_FALSE(budget.Withdraw(4));
  EXPECT_FALSE(budget.Withdraw(2));  // already granted
  budget.Release(50);
  budget.Release(10);
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_TRUE(granted.size() == 2);
  EXPECT_TRUE(budget.Acquire(500, 5, [] {}));
  EXPECT_EQ(budget.in_use(), 100u);
  budget.Release(500);
  EXPECT_EQ(budget.in_use(), 0u);
}

}  // namespace
}  // namespace rackwise::k8s
