// The claim model against upstream-shaped objects: what a claim spec asks (exactCount, All, firstAvailable,
// adminAccess, v1 and v1beta1 shapes), what an allocated claim holds (through ResourceSlices, MIG slices once per
// board), ComputeDomains and Workload API pod groups, and the errors a malformed object gets.
#include "dra_objects.h"

#include <gtest/gtest.h>

#include "dra_test_objects.h"

namespace rackwise::k8s {
namespace {

using testing::ClaimJson;
using testing::SliceJson;

Json Request(const std::string& name, const std::string& device_class, Json extra = Json::object()) {
  Json exactly = {{"deviceClassName", device_class}};
  exactly.update(extra);
  return {{"name", name}, {"exactly", exactly}};
}

Json ClaimSpecOf(Json requests) { return {{"devices", {{"requests", std::move(requests)}}}}; }

int Gpus(const Json& spec, int largest = 8) {
  absl::StatusOr<ClaimSpec> s = ClaimSpec::Parse(spec, "spec");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->Gpus(GpuDeviceClasses(), largest) : -1;
}

TEST(ClaimSpecTest, CountsGpuRequestsAtTheirLargest) {
  EXPECT_EQ(Gpus(ClaimSpecOf({Request("gpus", "gpu.nvidia.com", {{"allocationMode", "ExactCount"}, {"count", 4}})})),
            4);
  EXPECT_EQ(Gpus(ClaimSpecOf({Request("gpu", "gpu.nvidia.com")})), 1);  // count defaults to 1
  EXPECT_EQ(Gpus(ClaimSpecOf({Request("all", "gpu.nvidia.com", {{"allocationMode", "All"}})}), 4), 4);
  EXPECT_EQ(Gpus(ClaimSpecOf({Request("nic", "rdma.example.com", {{"count", 2}})})), 0);
  EXPECT_EQ(Gpus(ClaimSpecOf({Request("watch", "gpu.nvidia.com", {{"count", 8}, {"adminAccess", true}})})), 0);
  // CEL selectors narrow which devices, not how many.
  EXPECT_EQ(Gpus(ClaimSpecOf({Request("h100", "gpu.nvidia.com",
                                      {{"count", 2},
                                       {"selectors",
                                        {{{"cel",
                                           {{"expression",
                                             "device.attributes['gpu.nvidia.com']"
                                             ".productName.startsWith('H100')"}}}}}}})})),
            2);
  // firstAvailable: whichever the allocator picks, the filter holds room for the largest GPU alternative.
  const Json first = {{"name", "pick"},
                      {"firstAvailable",
                       {{{"name", "eight"}, {"deviceClassName", "gpu.nvidia.com"}, {"count", 8}},
                        {{"name", "four"}, {"deviceClassName", "gpu.nvidia.com"}, {"count", 4}},
                        {{"name", "cpu"}, {"deviceClassName", "cpu.example.com"}, {"count", 64}}}}};
  EXPECT_EQ(Gpus(ClaimSpecOf({first, Request("one", "gpu.nvidia.com")})), 9);
  // v1beta1 kept the fields on the request itself.
  EXPECT_EQ(Gpus(ClaimSpecOf({{{"name", "old"}, {"deviceClassName", "gpu.nvidia.com"}, {"count", 3}}})), 3);
}

TEST(ClaimSpecTest, ConfiguredAndExtendedResourceClassesAreGpus) {
  GpuDeviceClasses classes({"gpu.example.com"});
  EXPECT_FALSE(classes.IsGpu("gpu.nvidia.com"));
  EXPECT_TRUE(classes.IsGpu("gpu.example.com"));
  classes.ApplyDeviceClass(
      {{"metadata", {{"name", "whole-gpu"}}}, {"spec", {{"extendedResourceName", "nvidia.com/gpu"}}}}, false);
  EXPECT_TRUE(classes.IsGpu("whole-gpu"));
  classes.ApplyDeviceClass({{"metadata", {{"name", "whole-gpu"}}}}, true);
  EXPECT_FALSE(classes.IsGpu("whole-gpu"));
}

TEST(ClaimSpecTest, MalformedRequestsNameTheField) {
  absl::StatusOr<ClaimSpec> bad =
      ClaimSpec::Parse(ClaimSpecOf({Request("g", "gpu.nvidia.com", {{"allocationMode", "Most"}})}), "claim x: spec");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "claim x: spec.devices.requests[0].exactly.allocationMode: \"Most\" is not ExactCount or All");
  bad = ClaimSpec::Parse(ClaimSpecOf({Request("g", "gpu.nvidia.com", {{"count", 0}})}), "spec");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.devices.requests[0].exactly.count"), std::string::npos);
  bad = ClaimSpec::Parse({{"devices", {{"requests", "gpu"}}}}, "spec");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "spec.devices.requests: expected an array");
}

PodInfo PodWithClaims(std::vector<PodClaimRef> claims) {
  PodInfo pod;
  pod.name = "p";
  pod.namespace_ = "ml";
  pod.claims = std::move(claims);
  return pod;
}

TEST(DraObjectsTest, AllocatedDevicesMapToTheirNodeAndIndex) {
  DraObjects dra{GpuDeviceClasses()};
  dra.Replace(DraKind::kResourceSlice, {SliceJson("n1", 8, /*mig=*/true)});
  ASSERT_TRUE(
      dra.Apply(DraKind::kResourceClaim, ClaimJson("c", 4, {"gpu-6", "gpu-2", "gpu-3-mig-1g", "gpu-3"}, "n1"), false)
          .ok());
  PodDevices d = dra.Resolve(PodWithClaims({{"gpus", "c", ""}}), "n1", 8);
  ASSERT_EQ(d.claims.size(), 1u);
  EXPECT_EQ(d.claims[0].key, "ml/c");
  EXPECT_EQ(d.claims[0].gpus, 3);  // a MIG slice and its board are one board's power
  EXPECT_EQ(d.claims[0].indices, (std::vector<int>{6, 2, 3}));
  // Not yet allocated: the claim's spec; a template's claim not created yet: its template.
  ASSERT_TRUE(dra.Apply(DraKind::kResourceClaim, ClaimJson("c", 4), false).ok());
  EXPECT_EQ(dra.Resolve(PodWithClaims({{"gpus", "c", ""}}), "", 8).claims[0].gpus, 4);
  Json tmpl = {{"metadata", {{"name", "t"}, {"namespace", "ml"}}},
               {"spec", {{"spec", ClaimSpecOf({Request("gpus", "gpu.nvidia.com", {{"count", 2}})})}}}};
  ASSERT_TRUE(dra.Apply(DraKind::kResourceClaimTemplate, tmpl, false).ok());
  EXPECT_EQ(dra.Resolve(PodWithClaims({{"gpus", "", "t"}}), "", 8).claims[0].gpus, 2);
  // A slice deleted: its devices are still allocated, counted one GPU each without an index.
  ASSERT_TRUE(dra.Apply(DraKind::kResourceClaim, ClaimJson("c", 4, {"gpu-0", "gpu-1"}, "n1"), false).ok());
  dra.Apply(DraKind::kResourceSlice, SliceJson("n1", 8), true).IgnoreError();
  d = dra.Resolve(PodWithClaims({{"gpus", "c", ""}}), "n1", 8);
  EXPECT_EQ(d.claims[0].gpus, 2);
  EXPECT_TRUE(d.claims[0].indices.empty());
}

TEST(DraObjectsTest, ComputeDomainsAndWorkloadPodGroupsGiveGroups) {
  DraObjects dra{GpuDeviceClasses()};
  Json cd = {{"apiVersion", "resource.nvidia.com/v1beta1"},
             {"kind", "ComputeDomain"},
             {"metadata", {{"name", "train"}, {"namespace", "ml"}}},
             {"spec", {{"numNodes", 18}, {"channel", {{"resourceClaimTemplate", {{"name", "train-channel"}}}}}}}};
  ASSERT_TRUE(dra.Apply(DraKind::kComputeDomain, cd, false).ok());
  PodDevices d = dra.Resolve(PodWithClaims({{"channel", "", "train-channel"}}), "", 8);
  EXPECT_EQ(d.compute_domain, "ml/train");
  EXPECT_EQ(d.compute_domain_nodes, 18);
  EXPECT_TRUE(d.claims.empty());  // the channel is not a GPU
  PodInfo other = PodWithClaims({{"channel", "", "train-channel"}});
  other.namespace_ = "other";
  EXPECT_EQ(dra.Resolve(other, "", 8).compute_domain, "");

  Json pg = {{"apiVersion", "scheduling.k8s.io/v1alpha2"},
             {"kind", "PodGroup"},
             {"metadata", {{"name", "workers"}, {"namespace", "ml"}}},
             {"spec", {{"schedulingPolicy", {{"gang", {{"minCount", 8}}}}}}}};
  ASSERT_TRUE(dra.Apply(DraKind::kPodGroup, pg, false).ok());
  PodInfo member = PodWithClaims({});
  member.workload_pod_group = "ml/workers";
  EXPECT_EQ(dra.Resolve(member, "", 8).workload_min_count, 8);
  Json workload = {{"metadata", {{"name", "job"}, {"namespace", "ml"}}},
                   {"spec", {{"podGroups", {{{"name", "w"}, {"policy", {{"gang", {{"minCount", 4}}}}}}}}}}};
  ASSERT_TRUE(dra.Apply(DraKind::kWorkload, workload, false).ok());
  member.workload_pod_group = "ml/job/w";
  EXPECT_EQ(dra.Resolve(member, "", 8).workload_min_count, 4);
  dra.Replace(DraKind::kPodGroup, {});  // a relist without PodGroups keeps the Workloads' groups
  EXPECT_EQ(dra.Resolve(member, "", 8).workload_min_count, 4);
  pg["spec"]["schedulingPolicy"]["gang"]["minCount"] = -1;
  absl::StatusOr<std::string> bad = dra.Apply(DraKind::kPodGroup, pg, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("PodGroup ml/workers: spec.schedulingPolicy.gang.minCount"), std::string::npos);
}

}  // namespace
}  // namespace rackwise::k8s
