// GET /limits through the routes over a real service: every bound pod with its declared target (nothing is
// steered without telemetry), one node's share, the generation moving only on a change, and bad requests refused.
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "extender_test_support.h"
#include "http_routes.h"
#include "limits_document.h"

namespace rackwise::k8s {
namespace {

LimitsDocument Get(ExtenderRoutes& routes, absl::string_view target) {
  HttpAnswer answer = routes.Handle("GET", target, "");
  EXPECT_EQ(answer.status, 200) << answer.body;
  absl::StatusOr<LimitsDocument> d = ParseLimitsDocument(answer.body);
  EXPECT_TRUE(d.ok()) << d.status() << "\n" << answer.body;
  return d.ok() ? *d : LimitsDocument{};
}

TEST(ExtenderLimitsTest, PublishesBoundPodsAtTheirTargetsWithAGenerationThatMovesOnChange) {
  ExtenderMetrics metrics;
  auto s = testing::NewTestService(&metrics);
  ExtenderRoutes routes(s.get(), "standalone", [] { return int64_t{1'000}; });
  const std::string node = s->topology().nodes()[0].name;
  const Json pod = testing::PluginPodJson("train", 4, {{"rackwise.io/gpu-watts", "450"}});
  s->Filter(testing::ArgsOverAllNodes(pod, *s), 1'000);
  ASSERT_EQ(s->Bind(testing::BindingOf("train", node), 1'000), "");

  const LimitsDocument all = Get(routes, "/limits");
  ASSERT_EQ(all.allocations.size(), 1u);
  EXPECT_EQ(all.allocations[0].allocation, "pod/ml/train");
  EXPECT_EQ(all.allocations[0].milliwatts_per_gpu, 450'000);
  EXPECT_EQ(all.allocations[0].declared_milliwatts_per_gpu, 450'000);
  ASSERT_EQ(all.allocations[0].pods.size(), 1u);
  EXPECT_EQ(all.allocations[0].pods[0], (SteeredPod{"ml", "train", "uid-train", node}));
  EXPECT_EQ(Get(routes, "/limits").generation, all.generation);  // nothing changed
  EXPECT_EQ(Get(routes, "/limits?node=" + node).allocations, all.allocations);
  EXPECT_TRUE(Get(routes, "/limits?node=" + s->topology().nodes()[1].name).allocations.empty());

  absl::StatusOr<PodInfo> info = ParsePod(pod);
  ASSERT_TRUE(info.ok()) << info.status();
  info->node_name = node;
  s->DeletePod(*info);
  const LimitsDocument after = Get(routes, "/limits");
  EXPECT_TRUE(after.allocations.empty());
  EXPECT_GT(after.generation, all.generation);
}

TEST(ExtenderLimitsTest, RefusesOtherMethodsAndParameters) {
  ExtenderMetrics metrics;
  auto s = testing::NewTestService(&metrics);
  ExtenderRoutes routes(s.get(), "standalone", [] { return int64_t{1'000}; });
  EXPECT_EQ(routes.Handle("POST", "/limits", "{}").status, 405);
  for (const char* bad : {"/limits?node=", "/limits?nod=a", "/limits?node=a&node=b", "/limits?node=%41"}) {
    HttpAnswer answer = routes.Handle("GET", bad, "");
    EXPECT_EQ(answer.status, 400) << bad;
    EXPECT_TRUE(absl::StrContains(answer.body, "takes no parameter but node=NAME")) << answer.body;
  }
}

}  // namespace
}  // namespace rackwise::k8s
