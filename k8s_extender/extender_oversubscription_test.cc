// policy.oversubscribe_pct in the extender: with steering on and fresh telemetry a bound pod counts less than it
// declares in the ledger, while /limits and steering keep its declared watts as its GPUs' limit; stale telemetry
// counts it at its declared watts and /metrics says why; the state file brings the counted watts back after a
// restart, for a pod alone and for a gang's pods.
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "extender_test_support.h"

namespace rackwise::k8s {
namespace {

// One H100 rack of 4 nodes (10 kW idle, 962.5 W per GPU by default) under 40 kW, oversubscribed by 20%.
std::unique_ptr<ExtenderService> NewService(ExtenderMetrics* metrics) {
  SyntheticClusterSpec spec;
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 1, 4, 40.0});
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  d.mutable_policy()->set_oversubscribe_pct(20);
  auto t = Topology::Build(d);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::make_unique<ExtenderService>(std::make_unique<Topology>(*std::move(t)), ExtenderOptions{}, nullptr,
                                           metrics);
}

TelemetrySettings Steering() {
  TelemetrySettings s;
  s.enabled = true;
  s.on_overdraw = OverdrawAction::kLowerLimits;
  return s;
}

PowerReadings Nodes(const ExtenderService& s, double gpu_watts, double age_s) {
  PowerReadings r;
  r.nodes_ok = true;
  for (const Node& n : s.topology().nodes()) r.nodes.push_back({n.name, gpu_watts, age_s});
  return r;
}

Milliwatts CountedPerGpu(const ExtenderService& s, const std::string& id) {
  return s.WithLedger(
      [&](const Ledger& l) { return l.Find(id) ? l.PerGpu(*l.Find(id), l.Find(id)->nodes[0].node) : 0; });
}

std::string Metrics(const ExtenderService& s) {
  std::string out;
  s.RenderTelemetryMetrics(&out);
  return out;
}

void FilterAndBind(ExtenderService& s, const Json& pod, const std::string& node) {
  s.Filter(testing::ArgsOverAllNodes(pod, s), 1'000);
  ASSERT_EQ(s.Bind(testing::BindingOf(pod["metadata"]["name"], node), 1'000), "");
}

TEST(ExtenderOversubscriptionTest, CountsLessWithFreshTelemetryAndKeepsTheDeclaredWattsAsTheLimit) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  s->SetSynced(true);
  s->ApplyPowerReadings(Steering(), Nodes(*s, 1000, 1));
  ASSERT_EQ(s->telemetry_state(), TelemetryState::kFresh);
  const std::string node = s->topology().nodes()[0].name;
  FilterAndBind(*s, testing::PluginPodJson("train", 8), node);
  EXPECT_EQ(CountedPerGpu(*s, "pod/ml/train"), 770'000);  // 962.5 W less 20%
  // What Explain (gRPC) tells an operator: counted and declared watts.
  OversubscribedWatts explained;
  ASSERT_TRUE(s->Place({.id = "op", .gpus = 8, .gpus_per_node = 8}, /*commit=*/false, &explained).ok());
  EXPECT_TRUE(explained.applied);
  EXPECT_DOUBLE_EQ(explained.counted_watts_per_gpu, 770);
  EXPECT_DOUBLE_EQ(explained.declared_watts_per_gpu, 962.5);

  LimitsDocument limits = s->SteeredLimits();
  ASSERT_EQ(limits.allocations.size(), 1u);
  EXPECT_EQ(limits.allocations[0].declared_milliwatts_per_gpu, 962'500);
  EXPECT_EQ(limits.allocations[0].milliwatts_per_gpu, 962'500);
  const std::string m = Metrics(*s);
  EXPECT_TRUE(absl::StrContains(m, "rackwise_oversubscription_active 1\n")) << m;
  EXPECT_TRUE(absl::StrContains(m, "rackwise_oversubscribed_counted_watts_per_gpu{allocation=\"pod/ml/train\"} 770\n"));
  EXPECT_TRUE(
      absl::StrContains(m, "rackwise_oversubscribed_declared_watts_per_gpu{allocation=\"pod/ml/train\"} 962.5\n"));

  // 4 x 8 kW of GPUs on the 40 kW rack with 10 kW idle: steering holds the pod below its declared watts, and
  // names them as what it goes back to.
  for (int round = 0; round < 3; ++round) s->ApplyPowerReadings(Steering(), Nodes(*s, 8000, 1));
  limits = s->SteeredLimits();
  ASSERT_EQ(limits.allocations.size(), 1u);
  EXPECT_EQ(limits.allocations[0].declared_milliwatts_per_gpu, 962'500);
  EXPECT_LT(limits.allocations[0].milliwatts_per_gpu, 962'500);
  // Back under the cap: up to the declared watts, never above.
  for (int round = 0; round < 3; ++round) s->ApplyPowerReadings(Steering(), Nodes(*s, 1000, 1));
  EXPECT_EQ(s->SteeredLimits().allocations[0].milliwatts_per_gpu, 962'500);
}

TEST(ExtenderOversubscriptionTest, StaleTelemetryCountsTheDeclaredWattsAndSaysWhy) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  s->SetSynced(true);
  s->ApplyPowerReadings(Steering(), Nodes(*s, 1000, 600));  // older than stale_after_s
  ASSERT_EQ(s->telemetry_state(), TelemetryState::kStale);
  FilterAndBind(*s, testing::PluginPodJson("train", 8), s->topology().nodes()[0].name);
  EXPECT_EQ(CountedPerGpu(*s, "pod/ml/train"), 962'500);
  OversubscribedWatts explained;
  ASSERT_TRUE(s->Place({.id = "op", .gpus = 8, .gpus_per_node = 8}, /*commit=*/false, &explained).ok());
  EXPECT_FALSE(explained.applied);
  EXPECT_EQ(explained.why_not, "oversubscription is off while telemetry is stale: jobs count their declared watts");
  const std::string m = Metrics(*s);
  EXPECT_TRUE(absl::StrContains(m, "rackwise_oversubscription_active 0\n")) << m;
  EXPECT_TRUE(absl::StrContains(m,
                                "rackwise_oversubscription_off_info{reason=\"oversubscription is off while telemetry "
                                "is stale: jobs count their declared watts\"} 1\n"))
      << m;
  EXPECT_FALSE(absl::StrContains(m, "rackwise_oversubscribed_counted_watts_per_gpu{"));
}

TEST(ExtenderOversubscriptionTest, ARestartCountsWhatWasCountedForPodsAloneAndInGroups) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  v1::ClusterState saved;
  int saves = 0;
  s->SetStateSink([&](const v1::ClusterState& state) {
    saved = state;
    ++saves;
    return absl::OkStatus();
  });
  s->SetSynced(true);
  s->ApplyPowerReadings(Steering(), Nodes(*s, 1000, 1));
  const std::string node0 = s->topology().nodes()[0].name, node1 = s->topology().nodes()[1].name;
  const Json alone = testing::PluginPodJson("train", 8, {{"rackwise.io/gpu-watts", "600"}});
  FilterAndBind(*s, alone, node0);
  Json worker = testing::PluginPodJson("w0", 4, {{"rackwise.io/group", "g"}, {"rackwise.io/group-size", "2"}});
  s->Filter(testing::ArgsOverAllNodes(worker, *s), 1'000);
  const std::string group_node = *s->WithLedger([](const Ledger& l) {
    for (const Allocation* a : l.Allocations())
      if (absl::StrContains(a->id, "#")) return std::optional<std::string>(l.topology().nodes()[a->nodes[0].node].name);
    return std::optional<std::string>();
  });
  ASSERT_EQ(s->Bind(testing::BindingOf("w0", group_node), 1'000), "");
  s->SaveOversubscribed();  // the timer's beat
  ASSERT_EQ(saves, 1);
  s->SaveOversubscribed();  // nothing changed: not written again
  EXPECT_EQ(saves, 1);
  ASSERT_GE(saved.oversubscribed_size(), 2) << saved.DebugString();
  EXPECT_EQ(saved.oversubscribed(0).id().rfind("ml/", 0), 0u) << saved.DebugString();  // the group's slots first

  // A new process: the saved state first, then the API server's pods.
  auto restarted = NewService(&metrics);
  ASSERT_TRUE(restarted->RestoreOperatorState(saved).ok());
  restarted->ReplacePods({testing::BoundPod(alone, node0), testing::BoundPod(worker, group_node)}, 5'000);
  restarted->SetSynced(true);
  EXPECT_EQ(CountedPerGpu(*restarted, "pod/ml/train"), 480'000);  // 600 W less 20%, as before
  const LimitsDocument limits = restarted->SteeredLimits();
  ASSERT_EQ(limits.allocations.size(), 2u);
  for (const SteeredLimit& l : limits.allocations) {
    const bool group = absl::StrContains(l.allocation, "#");
    EXPECT_EQ(l.declared_milliwatts_per_gpu, group ? 962'500 : 600'000) << l.allocation;
    EXPECT_EQ(CountedPerGpu(*restarted, l.allocation), group ? 770'000 : 480'000) << l.allocation;
  }
  restarted->SaveOversubscribed();  // synced: the group's free slot and renumbered ids are gone from the book
}

}  // namespace
}  // namespace rackwise::k8s
