// Pod -> PodInfo: GPU counts as Kubernetes charges them, rackwise annotations, and the group sources.
#include "pod_spec.h"

#include <gtest/gtest.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "rackwise/power_bounds.h"
#include "rackwise/testing/watts_texts.h"

namespace rackwise::k8s {
namespace {

Json Pod(const std::string& extra_meta, const std::string& containers) {
  return Json::parse(R"({"metadata":{"name":"w-0","namespace":"ml","uid":"u1")" + extra_meta +
                     R"(},"spec":{"containers":)" + containers + "}}");
}

TEST(PodSpec, SumsGpuRequestsOverContainersAndFallsBackToLimits) {
  auto p = ParsePod(Pod("", R"([{"resources":{"requests":{"nvidia.com/gpu":"2"}}},
                                {"resources":{"limits":{"nvidia.com/gpu":"4"}}},
                                {"resources":{"requests":{"cpu":"1"}}}])"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gpus, 6);
  EXPECT_EQ(p->Key(), "ml/w-0");
  EXPECT_EQ(p->uid, "u1");
  EXPECT_TRUE(p->group.empty());
}

TEST(PodSpec, InitContainersTakeTheMax) {
  Json pod = Pod("", R"([{"resources":{"limits":{"nvidia.com/gpu":1}}}])");
  pod["spec"]["initContainers"] = Json::parse(R"([{"resources":{"limits":{"nvidia.com/gpu":"8"}}}])");
  auto p = ParsePod(pod);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->gpus, 8);
}

TEST(PodSpec, RefusesFractionalGpus) {
  auto p = ParsePod(Pod("", R"([{"resources":{"limits":{"nvidia.com/gpu":"500m"}}}])"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("nvidia.com/gpu"), std::string::npos);
}

TEST(PodSpec, Annotations) {
  auto p = ParsePod(Pod(R"(,"annotations":{"rackwise.io/nvlink":"Required","rackwise.io/gpu-watts":"550"})",
                        R"([{"resources":{"limits":{"nvidia.com/gpu":"8"}}}])"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->locality, Locality::kRequired);
  EXPECT_DOUBLE_EQ(p->watts_per_gpu, 550);
  EXPECT_FALSE(ParsePod(Pod(R"(,"annotations":{"rackwise.io/nvlink":"always"})", "[]")).ok());
  EXPECT_FALSE(ParsePod(Pod(R"(,"annotations":{"rackwise.io/gpu-watts":"-3"})", "[]")).ok());
}

// The annotation goes through the core's bounds (rackwise/power_bounds.h): extreme, tiny and malformed watts
// are refused naming the annotation; what passes is a sane number of watts, never a free job.
TEST(PodSpec, GpuWattsAnnotationIsBounded) {
  std::vector<const char*> texts(::rackwise::testing::kWattsTexts.begin(), ::rackwise::testing::kWattsTexts.end());
  texts.push_back("");  // an empty annotation is no declaration
  for (const char* text : texts) {
    auto p = ParsePod(Pod(absl::StrCat(R"(,"annotations":{"rackwise.io/gpu-watts":")", text, "\"}"),
                          R"([{"resources":{"limits":{"nvidia.com/gpu":"8"}}}])"));
    if (!p.ok()) {
      EXPECT_NE(p.status().message().find("rackwise.io/gpu-watts"), std::string::npos) << text << p.status();
      continue;
    }
    const bool absent = std::string(text).find_first_not_of(' ') == std::string::npos;
    if (absent) {
      EXPECT_EQ(p->watts_per_gpu, 0) << text;
    } else {
      EXPECT_GE(p->watts_per_gpu, kMinWattsPerGpu) << text;
      EXPECT_LE(p->watts_per_gpu, kMaxWattsPerGpu) << text;
    }
  }
  EXPECT_FALSE(ParsePod(Pod(R"(,"annotations":{"rackwise.io/gpu-watts":"0.001"})", "[]")).ok());
  EXPECT_FALSE(ParsePod(Pod(R"(,"annotations":{"rackwise.io/gpu-watts":"1e300"})", "[]")).ok());
}

TEST(PodSpec, RackwiseGroup) {
  auto p = ParsePod(Pod(R"(,"annotations":{"rackwise.io/group":"train","rackwise.io/group-size":"4"})", "[]"));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->group, "ml/group/train");
  EXPECT_EQ(p->group_size, 4);
  EXPECT_FALSE(ParsePod(Pod(R"(,"annotations":{"rackwise.io/group":"train"})", "[]")).ok());
  EXPECT_FALSE(ParsePod(Pod(R"(,"annotations":{"rackwise.io/group":"t","rackwise.io/group-size":"1e9"})", "[]")).ok());
}

TEST(PodSpec, JobSetGroupFromLabels) {
  auto p = ParsePod(
      Pod(R"(,"labels":{"jobset.sigs.k8s.io/jobset-name":"llm","jobset.sigs.k8s.io/replicatedjob-name":"workers",
                                     "jobset.sigs.k8s.io/replicatedjob-replicas":"4"},
                            "annotations":{"rackwise.io/pods-per-job":"2"})",
          "[]"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->group, "ml/jobset/llm/workers");
  EXPECT_EQ(p->group_size, 8);
}

TEST(PodSpec, PodGroupLabelWithMinMember) {
  auto p = ParsePod(Pod(R"(,"labels":{"scheduling.x-k8s.io/pod-group":"pg"},
                            "annotations":{"scheduling.x-k8s.io/min-member":"3"})",
                        "[]"));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->group, "ml/podgroup/pg");
  EXPECT_EQ(p->group_size, 3);
  auto alone = ParsePod(Pod(R"(,"labels":{"scheduling.x-k8s.io/pod-group":"pg"})", "[]"));
  ASSERT_TRUE(alone.ok());
  EXPECT_TRUE(alone->group.empty());  // size unknown: placed as a single pod
}

TEST(PodSpec, BoundAndPhase) {
  Json pod = Pod("", "[]");
  pod["spec"]["nodeName"] = "n1";
  pod["status"] = {{"phase", "Running"}};
  auto p = ParsePod(pod);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->Holds());
  pod["status"]["phase"] = "Succeeded";
  EXPECT_FALSE(ParsePod(pod)->Holds());
}

// spec.resourceClaims with the claim names the API server records, the claim behind a DRA-backed
// nvidia.com/gpu, and the Workload API's pod group (whose size, without group-size, comes from its PodGroup).
TEST(PodSpec, ClaimsAndWorkloadPodGroup) {
  Json pod = Pod("", "[]");
  pod["spec"]["resourceClaims"] = {{{"name", "gpus"}, {"resourceClaimTemplateName", "gpu4"}},
                                   {{"name", "shared"}, {"resourceClaimName", "team-gpus"}}};
  pod["spec"]["schedulingGroup"] = {{"podGroupName", "workers"}};
  pod["status"] = {{"resourceClaimStatuses", {{{"name", "gpus"}, {"resourceClaimName", "p-gpus-7xk2q"}}}},
                   {"extendedResourceClaimStatus",
                    {{"resourceClaimName", "p-extended-resources-9sd8f"}, {"requestMappings", Json::array()}}}};
  auto p = ParsePod(pod);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->claims.size(), 2u);
  EXPECT_EQ(p->claims[0].claim, "p-gpus-7xk2q");
  EXPECT_EQ(p->claims[0].template_name, "gpu4");
  EXPECT_EQ(p->claims[1].claim, "team-gpus");
  EXPECT_EQ(p->extended_resource_claim, "p-extended-resources-9sd8f");
  EXPECT_EQ(p->workload_pod_group, "ml/workers");
  EXPECT_TRUE(p->group.empty());  // minCount comes from the PodGroup object
  EXPECT_TRUE(p->HasDraReferences());
  pod["metadata"]["annotations"] = {{kGroupSizeKey, "4"}};
  p = ParsePod(pod);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->group, "ml/workload/workers");
  EXPECT_EQ(p->group_size, 4);
  EXPECT_EQ(p->group_source, GroupSource::kWorkload);
  // The first alpha's workloadRef names the Workload and its pod group.
  pod["spec"].erase("schedulingGroup");
  pod["spec"]["workloadRef"] = {{"name", "job"}, {"podGroup", "w"}};
  EXPECT_EQ(ParsePod(pod)->group, "ml/workload/job/w");
  // Each podGroupReplicaKey is a gang of its own, sized by the Workload's pod group (1.35's WorkloadReference).
  pod["spec"]["workloadRef"]["podGroupReplicaKey"] = "r1";
  auto replica = ParsePod(pod);
  ASSERT_TRUE(replica.ok()) << replica.status();
  EXPECT_EQ(replica->group, "ml/workload/job/w/r1");
  EXPECT_EQ(replica->workload_pod_group, "ml/job/w");
  pod["spec"]["workloadRef"] = {{"name", "job"}};  // podGroup is required upstream: no guessing a group
  EXPECT_EQ(ParsePod(pod).status().message(), "spec.workloadRef: needs both name and podGroup");
  pod["spec"]["workloadRef"] = {{"name", "job"}, {"podGroup", "w"}};
  pod["spec"]["resourceClaims"] = {{{"name", "both"}, {"resourceClaimName", "a"}, {"resourceClaimTemplateName", "b"}}};
  auto bad = ParsePod(pod);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "spec.resourceClaims[0]: needs a name and exactly one of resourceClaimName, resourceClaimTemplateName");
}

}  // namespace
}  // namespace rackwise::k8s
