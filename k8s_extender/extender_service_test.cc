// The extender service without HTTP: what the verbs answer is the core's word (FilterNodes' verdicts, Place's
// pick on top of prioritize, CheckRequest's message for a malformed pod), binds book what the core would place,
// gang reservations expire on the clock passed in, and every decision counter moves by exactly one per call.
#include "extender_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "extender_test_support.h"

namespace rackwise::k8s {
namespace {

std::unique_ptr<ExtenderService> NewService(ExtenderMetrics* metrics, ExtenderOptions options = {}) {
  return testing::NewTestService(metrics, options);
}
Json Pod(const std::string& name, int gpus, Json annotations = Json::object()) {
  return testing::PluginPodJson(name, gpus, std::move(annotations));
}
ExtenderArgs Args(const Json& pod, const ExtenderService& s) { return testing::ArgsOverAllNodes(pod, s); }
BindingArgs Binding(const std::string& pod, const std::string& node) { return testing::BindingOf(pod, node); }

// Filter's feasible nodes are exactly those the core's FilterNodes lets through, as the ledger fills up.
TEST(ExtenderServiceTest, FilterAnswersTheCoresVerdictForEveryNode) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  std::mt19937 rng(3);
  int64_t now = 1'000;
  for (int i = 0; i < 40; ++i) {
    const int gpus = std::vector<int>{1, 2, 4, 8}[rng() % 4];
    const Json pod = Pod("p" + std::to_string(i), gpus);
    const ExtenderArgs args = Args(pod, *s);
    const FilterResult result = s->Filter(args, now);
    ASSERT_TRUE(result.error.empty()) << result.error;
    PlacementRequest request;
    request.gpus = request.gpus_per_node = gpus;
    std::vector<NodeId> ids(s->topology().nodes().size());
    for (size_t n = 0; n < ids.size(); ++n) ids[n] = static_cast<NodeId>(n);
    std::vector<std::optional<NodeReason>> verdicts;
    ASSERT_TRUE(s->WithLedger([&](const Ledger& l) { return Placer::FilterNodes(l, request, ids, &verdicts); }).ok());
    std::vector<uint32_t> want;
    for (uint32_t n = 0; n < verdicts.size(); ++n)
      if (!verdicts[n]) want.push_back(n);
    ASSERT_EQ(result.feasible, want) << "pod " << i;
    ASSERT_EQ(result.failed.size() + result.unresolvable.size() + result.feasible.size(), ids.size());
    if (!result.feasible.empty()) {
      const uint32_t pick = result.feasible[rng() % result.feasible.size()];
      ASSERT_EQ(s->Bind(Binding("p" + std::to_string(i), s->topology().nodes()[pick].name), now), "");
    }
    now += 10;
  }
  EXPECT_TRUE(s->CheckInvariants().ok());
}

// kube-scheduler binds to the best-scored node; that node is the one Place picks, and the bind books it.
TEST(ExtenderServiceTest, PrioritizeTopNodeIsTheCoresPickAndBindBooksIt) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  for (int i = 0; i < 12; ++i) {
    const std::string name = "q" + std::to_string(i);
    const Json pod = Pod(name, i % 3 == 0 ? 8 : 2);
    const ExtenderArgs args = Args(pod, *s);
    const FilterResult filtered = s->Filter(args, 1'000 + i);
    ASSERT_TRUE(filtered.error.empty());
    absl::StatusOr<std::vector<int>> scores = s->Prioritize(args, 1'000 + i);
    ASSERT_TRUE(scores.ok()) << scores.status();
    if (filtered.feasible.empty()) {  // nothing fits (8 GPUs once the capped H100 racks are full): all 0
      EXPECT_EQ(*std::max_element(scores->begin(), scores->end()), 0);
      continue;
    }
    const size_t best = std::max_element(scores->begin(), scores->end()) - scores->begin();
    ASSERT_EQ((*scores)[best], 10);
    PlacementRequest request;
    request.id = "pod/ml/" + name;
    request.gpus = request.gpus_per_node = i % 3 == 0 ? 8 : 2;
    auto outcome = s->WithLedger([&](const Ledger& l) { return Placer::Place(l, request); });
    ASSERT_TRUE(outcome.ok());
    const auto& decision = std::get<PlacementDecision>(*outcome);
    ASSERT_EQ(decision.nodes.size(), 1u);
    EXPECT_EQ(decision.nodes[0].node, static_cast<NodeId>(best));
    ASSERT_EQ(s->Bind(Binding(name, s->topology().nodes()[best].name), 1'000 + i), "");
    EXPECT_EQ(s->NodeOfPod("ml/" + name), s->topology().nodes()[best].name);
  }
}

// Watts outside the policy's bounds: the pod can never fit, every node says so in the core's words.
TEST(ExtenderServiceTest, MalformedWattsAreUnresolvableWithTheCoresMessage) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  const Json pod = Pod("w", 2, {{kGpuWattsAnnotation, "5"}});
  const ExtenderArgs args = Args(pod, *s);
  const FilterResult result = s->Filter(args, 1'000);
  PlacementRequest request;
  request.gpus = request.gpus_per_node = 2;
  request.watts_per_gpu = 5;
  const absl::Status core = Placer::CheckRequest(s->topology(), request);
  ASSERT_FALSE(core.ok());
  EXPECT_TRUE(result.feasible.empty());
  EXPECT_EQ(result.unresolvable.size(), s->topology().nodes().size());
  ASSERT_EQ(result.reasons.size(), 1u);
  EXPECT_NE(result.reasons[0].find(std::string(core.message())), std::string::npos) << result.reasons[0];
  EXPECT_NE(s->Bind(Binding("w", s->topology().nodes()[0].name), 1'001), "");  // never seen as placeable
}

// A gang's free slots are held until the TTL after the last progress, then released by the timer's call alone.
TEST(ExtenderServiceTest, GangSlotsAreHeldUntilTheirTtlThenReleased) {
  ExtenderMetrics metrics;
  ExtenderOptions options;
  options.reservation_ttl_ms = 5'000;
  auto s = NewService(&metrics, options);
  const Json annotations = {{kGroupKey, "train"}, {kGroupSizeKey, "3"}};
  const ExtenderArgs first = Args(Pod("g0", 8, annotations), *s);
  const FilterResult result = s->Filter(first, 10'000);
  ASSERT_FALSE(result.feasible.empty());
  EXPECT_EQ(s->Snapshot().free_reserved_slots, 3);
  ASSERT_EQ(s->Bind(Binding("g0", s->topology().nodes()[result.feasible[0]].name), 10'100), "");
  EXPECT_EQ(s->Snapshot().free_reserved_slots, 2);
  EXPECT_EQ(s->ExpireReservations(15'099), 0);  // 5 s after the bind (the last progress) not yet passed
  EXPECT_EQ(s->ExpireReservations(15'101), 2);
  EXPECT_EQ(s->Snapshot().free_reserved_slots, 0);
  EXPECT_EQ(s->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 1u);  // the bound pod stays
}

// Each call moves exactly one decision counter by exactly one.
TEST(ExtenderServiceTest, EveryVerbCountsOneDecisionPerCall) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  const ExtenderArgs args = Args(Pod("c", 4), *s);
  for (int i = 1; i <= 3; ++i) {
    s->Filter(args, 1'000);
    EXPECT_EQ(metrics.decisions(Verb::kFilter, "feasible"), static_cast<uint64_t>(i));
    ASSERT_TRUE(s->Prioritize(args, 1'000).ok());
    EXPECT_EQ(metrics.decisions(Verb::kPrioritize, "scored"), static_cast<uint64_t>(i));
  }
  const std::string node = s->topology().nodes()[0].name;
  EXPECT_EQ(s->Bind(Binding("c", node), 1'000), "");
  EXPECT_EQ(metrics.decisions(Verb::kBind, "bound"), 1u);
  EXPECT_EQ(s->Bind(Binding("c", node), 1'001), "");
  EXPECT_EQ(metrics.decisions(Verb::kBind, "already_bound"), 1u);
  EXPECT_NE(s->Bind(Binding("unseen", node), 1'002), "");
  EXPECT_EQ(metrics.decisions(Verb::kBind, "refused"), 1u);
  EXPECT_EQ(metrics.decisions(Verb::kBind, "bound"), 1u);
}

}  // namespace
}  // namespace rackwise::k8s
