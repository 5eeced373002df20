// PlanLimits against hand-made facts, and against an independent checker over every combination of a few
// pods, boards and held limits (the invariants every plan must keep, whatever the input).
#include "limit_plan.h"

#include <gtest/gtest.h>

#include <set>

namespace rackwise::node_agent {
namespace {

NodeGpus FourGpus() {
  NodeGpus g;
  g.count = 4;
  for (int i = 0; i < 4; ++i) {
    g.uuid_index["GPU-" + std::string(8, static_cast<char>('a' + i))] = i;
    g.ranges[i] = {100'000, 700'000};
  }
  return g;
}

PodWatts Pod(const std::string& name, int64_t mw, const std::string& uid = "u1") {
  return PodWatts{"ml", name, uid, mw, ""};
}

TEST(PlanLimits, LimitsExactlyThePodsGpusByIndexOrUuid) {
  LimitPlan plan =
      PlanLimits({Pod("a", 450'000), Pod("b", 300'000)},
                 {{"ml", "a", {"2", "0"}}, {"ml", "b", {"GPU-dddddddd", "GPU-bbbbbbbb::1"}}}, {}, FourGpus());
  EXPECT_TRUE(plan.restore.empty());
  EXPECT_TRUE(plan.refused.empty());
  ASSERT_EQ(plan.apply.size(), 2u);
  EXPECT_EQ(plan.apply[0].owner, "ml/a/u1");
  EXPECT_EQ(plan.apply[0].gpus, (std::vector<int>{0, 2}));
  EXPECT_EQ(plan.apply[0].milliwatts, 450'000);
  EXPECT_EQ(plan.apply[1].owner, "ml/b/u1");
  EXPECT_EQ(plan.apply[1].gpus, (std::vector<int>{1, 3}));
}

TEST(PlanLimits, HeldAndUnchangedIsLeftAloneGoneIsRestoredNewWattsAreSetInPlace) {
  std::vector<HeldLimit> held = {{"ml/a/u1", {0}, 450'000}, {"ml/gone/u9", {1}, 300'000}, {"ml/c/u1", {2}, 500'000}};
  LimitPlan plan =
      PlanLimits({Pod("a", 450'000), Pod("c", 400'000)}, {{"ml", "a", {"0"}}, {"ml", "c", {"2"}}}, held, FourGpus());
  EXPECT_EQ(plan.restore, (std::vector<std::string>{"ml/gone/u9"}));  // c is not restored to the default first
  ASSERT_EQ(plan.apply.size(), 1u);
  EXPECT_EQ(plan.apply[0].owner, "ml/c/u1");
  EXPECT_EQ(plan.apply[0].gpus, (std::vector<int>{2}));
  EXPECT_EQ(plan.apply[0].milliwatts, 400'000);
}

TEST(PlanLimits, NewBoardsOrAMixedHoldingAreRestoredAndAppliedAgain) {
  std::vector<HeldLimit> held = {{"ml/a/u1", {0}, 450'000}, {"ml/c/u1", {2}, -1}};
  LimitPlan plan = PlanLimits({Pod("a", 450'000), Pod("c", 400'000)}, {{"ml", "a", {"0", "1"}}, {"ml", "c", {"2"}}},
                              held, FourGpus());
  EXPECT_EQ(plan.restore, (std::vector<std::string>{"ml/a/u1", "ml/c/u1"}));
  ASSERT_EQ(plan.apply.size(), 2u);
}

TEST(PlanLimits, RecreatedPodIsANewOwner) {
  LimitPlan plan = PlanLimits({Pod("a", 450'000, "u2")}, {{"ml", "a", {"0"}}}, {{"ml/a/u1", {0}, 450'000}}, FourGpus());
  EXPECT_EQ(plan.restore, (std::vector<std::string>{"ml/a/u1"}));
  ASSERT_EQ(plan.apply.size(), 1u);
  EXPECT_EQ(plan.apply[0].owner, "ml/a/u2");
}

TEST(PlanLimits, RefusesBadAnnotationsUnknownDevicesAndOutOfRangeWatts) {
  PodWatts bad = Pod("bad", 0);
  bad.error = "metadata.annotations[rackwise.io/gpu-watts]: \"lots\" is not a number";
  LimitPlan plan = PlanLimits(
      {bad, Pod("tiny", 1), Pod("huge", 5'000'000), Pod("ghost", 400'000), Pod("far", 400'000), Pod("mig", 400'000)},
      {{"ml", "bad", {"0"}},
       {"ml", "tiny", {"1"}},
       {"ml", "huge", {"2"}},
       {"ml", "ghost", {"GPU-99999999"}},
       {"ml", "far", {"7"}},
       {"ml", "mig", {"MIG-1234"}}},
      {{"ml/bad/u1", {0}, 300'000}}, FourGpus());
  EXPECT_TRUE(plan.apply.empty());
  EXPECT_EQ(plan.restore, (std::vector<std::string>{"ml/bad/u1"}));  // a limit held before the edit goes
  ASSERT_EQ(plan.refused.size(), 5u);
  EXPECT_NE(plan.refused[0].reason.find("lots"), std::string::npos);
  EXPECT_NE(
      plan.refused[1].reason.find("0.001 W is below GPU 1's lowest power limit (100 W; its range is [100, 700] W)"),
      std::string::npos)
      << plan.refused[1].reason;
  EXPECT_EQ(plan.refused[2].name, "ghost");
  EXPECT_NE(plan.refused[2].reason.find("no GPU with this UUID"), std::string::npos);
  EXPECT_NE(plan.refused[3].reason.find("this node has 4 GPUs"), std::string::npos);
  EXPECT_NE(plan.refused[4].reason.find("MIG"), std::string::npos);
  // 5000 W per GPU on 700 W boards: they cannot draw more than counted; nothing to limit, nothing refused.
  EXPECT_EQ(plan.unneeded, (std::vector<std::string>{"ml/huge"}));
}

TEST(PlanLimits, OnlyBoardsThatCouldDrawMoreAreLimited) {
  NodeGpus gpus = FourGpus();
  gpus.ranges[1] = {100'000, 400'000};  // a smaller board
  LimitPlan plan = PlanLimits({Pod("a", 450'000)}, {{"ml", "a", {"0", "1"}}}, {}, gpus);
  ASSERT_EQ(plan.apply.size(), 1u);
  EXPECT_EQ(plan.apply[0].gpus, (std::vector<int>{0}));
  plan = PlanLimits({Pod("a", 700'000)}, {{"ml", "a", {"0"}}}, {{"ml/a/u1", {0}, 600'000}}, FourGpus());
  EXPECT_TRUE(plan.apply.empty());
  EXPECT_EQ(plan.restore, (std::vector<std::string>{"ml/a/u1"}));  // raised to the maximum: the old limit goes
}

TEST(PlanLimits, PodWithoutDevicesYetWaits) {
  LimitPlan plan = PlanLimits({Pod("a", 450'000)}, {}, {}, FourGpus());
  EXPECT_TRUE(plan.apply.empty());
  EXPECT_EQ(plan.waiting, (std::vector<std::string>{"ml/a"}));
}

TEST(PlanLimits, SharedBoardGoesToTheLowestWatts) {
  LimitPlan plan = PlanLimits({Pod("hi", 600'000), Pod("lo", 300'000)},
                              {{"ml", "hi", {"GPU-aaaaaaaa::0"}}, {"ml", "lo", {"GPU-aaaaaaaa::1"}}}, {}, FourGpus());
  ASSERT_EQ(plan.apply.size(), 1u);
  EXPECT_EQ(plan.apply[0].owner, "ml/lo/u1");
  ASSERT_EQ(plan.refused.size(), 1u);
  EXPECT_EQ(plan.refused[0].name, "hi");
  EXPECT_NE(plan.refused[0].reason.find("shared with ml/lo"), std::string::npos);
}

// Every combination of three pods (watts, devices, held state) on two boards: the plan keeps its invariants.
TEST(PlanLimits, InvariantsOverEveryCombination) {
  NodeGpus gpus = FourGpus();
  gpus.count = 2;
  const std::vector<int64_t> watts = {0 /* bad annotation */, 50'000 /* below range */, 300'000, 450'000,
                                      900'000 /* above the boards' maximum */};
  const std::vector<std::vector<std::string>> devs = {{}, {"0"}, {"1"}, {"0", "GPU-bbbbbbbb"}, {"GPU-zzzzzzzz"}};
  const std::vector<std::optional<HeldLimit>> helds = {std::nullopt, HeldLimit{"", {0}, 300'000},
                                                       HeldLimit{"", {1}, 450'000}};
  int cases = 0;
  const int per_pod = watts.size() * devs.size() * helds.size();
  for (int combo = 0; combo < per_pod * per_pod * per_pod; ++combo) {
    std::vector<PodWatts> pods;
    std::vector<PodDevices> devices;
    std::vector<HeldLimit> held;
    int c = combo;
    for (int p = 0; p < 3; ++p, c /= per_pod) {
      int x = c % per_pod;
      PodWatts pod = Pod(std::string(1, static_cast<char>('a' + p)), watts[x % watts.size()]);
      if (pod.milliwatts_per_gpu == 0) pod.error = "bad";
      pods.push_back(pod);
      devices.push_back({"ml", pod.name, devs[(x / watts.size()) % devs.size()]});
      if (const auto& h = helds[x / (watts.size() * devs.size())]) {
        held.push_back(*h);
        held.back().owner = pod.Owner();
      }
    }
    LimitPlan plan = PlanLimits(pods, devices, held, gpus);
    ++cases;
    std::set<int> boards;
    std::set<std::string> applied, restored(plan.restore.begin(), plan.restore.end());
    for (const LimitToApply& a : plan.apply) {
      applied.insert(a.owner);
      for (int g : a.gpus) {
        ASSERT_TRUE(boards.insert(g).second) << "board " << g << " limited twice, case " << combo;
        ASSERT_TRUE(g >= 0 && g < gpus.count);
      }
      ASSERT_GE(a.milliwatts, gpus.ranges[0].min_mw);
      ASSERT_LE(a.milliwatts, gpus.ranges[0].max_mw);
    }
    // A held limit on a board now applied to someone else is restored first; every held limit is kept as is
    // (then not re-applied), set again in place (the same boards, other watts) or restored.
    std::set<int> kept_boards;
    for (const HeldLimit& h : held) {
      if (restored.count(h.owner)) continue;
      if (applied.count(h.owner)) {
        for (const LimitToApply& a : plan.apply) {
          if (a.owner != h.owner) continue;
          ASSERT_EQ(a.gpus, h.gpus) << "case " << combo;
          ASSERT_NE(a.milliwatts, h.milliwatts) << "case " << combo;
        }
        continue;
      }
      for (int g : h.gpus) kept_boards.insert(g);
    }
    for (int g : kept_boards) ASSERT_EQ(boards.count(g), 0u) << "case " << combo;
    // Each pod is exactly one of: applied, kept, refused, waiting, unneeded.
    for (const PodWatts& pod : pods) {
      int roles = applied.count(pod.Owner());
      for (const HeldLimit& h : held)
        roles += h.owner == pod.Owner() && !restored.count(h.owner) && !applied.count(h.owner);
      for (const RefusedPod& r : plan.refused) roles += r.name == pod.name;
      for (const std::string& w : plan.waiting) roles += w == pod.Key();
      for (const std::string& u : plan.unneeded) roles += u == pod.Key();
      ASSERT_EQ(roles, 1) << "pod " << pod.name << ", case " << combo;
      if (!pod.error.empty()) {
        ASSERT_EQ(applied.count(pod.Owner()), 0u);
      }
    }
  }
  EXPECT_EQ(cases, per_pod * per_pod * per_pod);
}

}  // namespace
}  // namespace rackwise::node_agent
