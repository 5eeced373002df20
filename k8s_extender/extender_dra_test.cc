// The extender service with GPUs from DRA claims: filter counts them as it counts nvidia.com/gpu (a capped rack
// refuses for power), binds and the API server's view book them with their watts, a ComputeDomain's channel is
// no GPU, a shared claim is one allocation, a ComputeDomain's pods land in one NVLink domain, and a restart that
// lists pods and claims in either order rebuilds the same ledger.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "dra_test_objects.h"
#include "extender_service.h"
#include "extender_test_support.h"

namespace rackwise::k8s {
namespace {

using testing::ClaimJson;
using testing::ClaimSpecJson;
using testing::DraPodJson;
using testing::SliceJson;
using testing::TemplateJson;

std::unique_ptr<ExtenderService> NewService(ExtenderMetrics* metrics) { return testing::NewTestService(metrics); }
Json PluginPod(const std::string& name, int gpus) { return testing::PluginPodJson(name, gpus); }
ExtenderArgs Args(const Json& pod, const ExtenderService& s) { return testing::ArgsOverAllNodes(pod, s); }
BindingArgs Binding(const std::string& pod, const std::string& node) { return testing::BindingOf(pod, node); }

// Feasible node names and the reason texts of the others.
std::pair<std::vector<uint32_t>, std::set<std::string>> Verdicts(const FilterResult& r) {
  std::set<std::string> reasons;
  for (const auto& f : r.failed) reasons.insert(r.reasons[f.reason]);
  for (const auto& f : r.unresolvable) reasons.insert(r.reasons[f.reason]);
  return {r.feasible, reasons};
}

TEST(ExtenderDraTest, FilterCountsClaimedGpusAsItCountsDevicePluginGpus) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  ASSERT_TRUE(
      s->ApplyDraObject(DraKind::kResourceClaimTemplate, TemplateJson("gpu4", ClaimSpecJson(4)), false, 0).ok());
  bool power_refused = false;
  for (int i = 0; i < 12; ++i) {
    const FilterResult dra = s->Filter(Args(DraPodJson("d" + std::to_string(i), {"gpu4"}), *s), 1000 + i);
    const FilterResult plugin = s->Filter(Args(PluginPod("q" + std::to_string(i), 4), *s), 1000 + i);
    ASSERT_TRUE(dra.error.empty()) << dra.error;
    ASSERT_EQ(Verdicts(dra), Verdicts(plugin)) << "pod " << i;
    for (const auto& [index, reason] : dra.failed)
      power_refused |= dra.reasons[reason].find("power") != std::string::npos;
    // Fill the first H100 rack with device-plugin pods while it takes them, so that its cap binds.
    const uint32_t node = static_cast<uint32_t>(i % 4);
    if (std::find(plugin.feasible.begin(), plugin.feasible.end(), node) != plugin.feasible.end()) {
      ASSERT_EQ(s->Bind(Binding("q" + std::to_string(i), s->topology().nodes()[node].name), 2000 + i), "");
    }
  }
  EXPECT_TRUE(power_refused) << "the first rack's cap never bound";
  EXPECT_TRUE(s->CheckInvariants().ok());
}

TEST(ExtenderDraTest, BoundClaimsAreBookedWithTheirWattsAndTheChannelIsNoGpu) {
  ExtenderMetrics m1, m2;
  auto dra = NewService(&m1);
  auto plugin = NewService(&m2);
  ASSERT_TRUE(
      dra->ApplyDraObject(DraKind::kResourceClaimTemplate, TemplateJson("gpu4", ClaimSpecJson(4)), false, 0).ok());
  const Json channel =
      TemplateJson("cd-channel", ClaimSpecJson(1, "compute-domain-default-channel.nvidia.com", "channel"));
  ASSERT_TRUE(dra->ApplyDraObject(DraKind::kResourceClaimTemplate, channel, false, 0).ok());
  const std::string node = dra->topology().nodes()[0].name;
  ASSERT_TRUE(dra->Filter(Args(DraPodJson("a", {"gpu4"}), *dra), 1).error.empty());
  ASSERT_EQ(dra->Bind(Binding("a", node), 2), "");
  // A ComputeDomain channel next to nvidia.com/gpu: 4 GPUs, not 5, not 0.
  ASSERT_TRUE(dra->Filter(Args(DraPodJson("b", {"cd-channel"}, 4), *dra), 3).error.empty());
  ASSERT_EQ(dra->Bind(Binding("b", node), 4), "");
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(plugin->Filter(Args(PluginPod(name, 4), *plugin), 1).error.empty());
    ASSERT_EQ(plugin->Bind(Binding(name, node), 2), "");
  }
  const StateSnapshot got = dra->Snapshot(), want = plugin->Snapshot();
  EXPECT_EQ(got.racks[0].draw, want.racks[0].draw);
  EXPECT_GT(got.racks[0].draw, dra->Snapshot().racks[1].draw);
  EXPECT_EQ(got.domains[0].free_gpus, want.domains[0].free_gpus);
  EXPECT_EQ(got.domains[0].free_gpus, 0);
}

using testing::BoundPod;

// Every node's booked GPUs, and every rack's draw.
std::pair<std::vector<GpuMask>, std::vector<Milliwatts>> LedgerOf(const ExtenderService& s) {
  std::vector<GpuMask> gpus;
  for (NodeId n = 0; n < static_cast<NodeId>(s.topology().nodes().size()); ++n) {
    gpus.push_back(s.WithLedger([n](const Ledger& l) { return l.allocated_gpus(n); }));
  }
  std::vector<Milliwatts> draw;
  for (const RackSnapshot& r : s.Snapshot().racks) draw.push_back(r.draw);
  return {gpus, draw};
}

// A claim two pods share is one allocation: counted with the first pod, passed to the second when the first
// goes, released with the last.
TEST(ExtenderDraTest, ASharedClaimIsCountedOnce) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  const std::string node = s->topology().nodes()[1].name;
  ASSERT_TRUE(s->ApplyDraObject(DraKind::kResourceSlice, SliceJson(node, 8), false, 0).ok());
  ASSERT_TRUE(s->ApplyDraObject(DraKind::kResourceClaim,
                                ClaimJson("shared", 4, {"gpu-4", "gpu-5", "gpu-6", "gpu-7"}, node), false, 0)
                  .ok());
  auto pod = [](const std::string& name) {
    Json p = DraPodJson(name, {});
    p["spec"]["resourceClaims"] = {{{"name", "gpus"}, {"resourceClaimName", "shared"}}};
    return p;
  };
  s->ApplyPod(BoundPod(pod("a"), node), 1);
  s->ApplyPod(BoundPod(pod("b"), node), 2);
  EXPECT_EQ(LedgerOf(*s).first[1], GpuMask{0xf0});  // the allocated devices, once
  s->DeletePod(BoundPod(pod("a"), node));
  EXPECT_EQ(LedgerOf(*s).first[1], GpuMask{0xf0});  // still in use by b
  s->DeletePod(BoundPod(pod("b"), node));
  EXPECT_EQ(LedgerOf(*s).first[1], GpuMask{0});
  EXPECT_TRUE(s->CheckInvariants().ok());
}

// Pods bound through filter and bind, then their claims allocated and their binding seen: a new extender that
// lists the same objects, pods first or claims first, books the same GPUs on the same nodes.
TEST(ExtenderDraTest, ARestartRebuildsTheSameLedgerFromClaims) {
  ExtenderMetrics m0, m1, m2;
  auto live = NewService(&m0);
  std::vector<Json> slices, claims, templates = {TemplateJson("gpu4", ClaimSpecJson(4))};
  for (int n = 0; n < 8; ++n) slices.push_back(SliceJson(live->topology().nodes()[n].name, 8));
  live->ReplaceDraObjects(DraKind::kResourceSlice, slices, 0);
  live->ReplaceDraObjects(DraKind::kResourceClaimTemplate, templates, 0);
  std::vector<PodInfo> bound;
  for (int i = 0; i < 6; ++i) {
    const std::string name = "r" + std::to_string(i);
    const Json pod = DraPodJson(name, {"gpu4"});
    const FilterResult f = live->Filter(Args(pod, *live), 10 + i);
    ASSERT_FALSE(f.feasible.empty()) << f.error;
    const std::string node = live->topology().nodes()[f.feasible[0]].name;
    // The scheduler's allocator picked the upper half of the board, whatever the extender would have picked.
    const std::vector<std::string> devices = i % 2 == 0 ? std::vector<std::string>{"gpu-4", "gpu-5", "gpu-6", "gpu-7"}
                                                        : std::vector<std::string>{"gpu-0", "gpu-1", "gpu-2", "gpu-3"};
    claims.push_back(ClaimJson(name + "-gpu4", 4, devices, node));
    ASSERT_TRUE(live->ApplyDraObject(DraKind::kResourceClaim, claims.back(), false, 20 + i).ok());
    ASSERT_EQ(live->Bind(Binding(name, node), 30 + i), "");
    bound.push_back(BoundPod(pod, node));
    live->ApplyPod(bound.back(), 40 + i);
  }
  const auto want = LedgerOf(*live);
  auto pods_first = NewService(&m1);
  pods_first->ReplacePods(bound, 100);
  pods_first->ReplaceDraObjects(DraKind::kResourceSlice, slices, 101);
  pods_first->ReplaceDraObjects(DraKind::kResourceClaim, claims, 102);
  EXPECT_EQ(LedgerOf(*pods_first), want);
  auto claims_first = NewService(&m2);
  claims_first->ReplaceDraObjects(DraKind::kResourceClaim, claims, 100);
  claims_first->ReplaceDraObjects(DraKind::kResourceSlice, slices, 101);
  claims_first->ReplacePods(bound, 102);
  EXPECT_EQ(LedgerOf(*claims_first), want);
  EXPECT_TRUE(pods_first->CheckInvariants().ok());
}

// 18 pods of one ComputeDomain (numNodes 18, 4 GPUs each from a claim template): one group, planned within one
// NVL72 rack (the one with room for all of them), not spread over both.
TEST(ExtenderDraTest, AComputeDomainsPodsLandInOneNvlinkDomain) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  testing::ApplyComputeDomainObjects(*s, "train", 18, "train-channel");
  // One GPU taken in the first NVL72 rack: only the second can hold all 72 GPUs.
  for (int rack : {2}) {
    for (NodeId n = 0; n < static_cast<NodeId>(s->topology().nodes().size()); ++n) {
      if (s->topology().nodes()[n].rack != rack) continue;
      const std::string name = "x" + std::to_string(rack);
      ASSERT_TRUE(s->Filter(Args(PluginPod(name, 1), *s), 1).error.empty());
      ASSERT_EQ(s->Bind(Binding(name, s->topology().nodes()[n].name), 2), "");
      break;
    }
  }
  std::set<RackId> racks;
  for (int i = 0; i < 18; ++i) {
    const std::string name = "w" + std::to_string(i);
    const FilterResult f = s->Filter(Args(DraPodJson(name, {"gpu4", "train-channel"}), *s), 10 + i);
    ASSERT_FALSE(f.feasible.empty()) << "pod " << i << ": " << (f.reasons.empty() ? f.error : f.reasons[0]);
    const NodeId node = f.feasible[0];
    ASSERT_EQ(s->Bind(Binding(name, s->topology().nodes()[node].name), 20 + i), "");
    racks.insert(s->topology().nodes()[node].rack);
  }
  EXPECT_EQ(racks.size(), 1u);
  EXPECT_EQ(s->Snapshot().reservations, 1);
}

// With nvidia.com/gpu.clique labels, a ComputeDomain is planned within one clique even where the description's
// NVLink domain is larger: the first NVL72 rack is labelled as two cliques of 9 trays (one GPU taken in the
// first), the second rack carries no label. 9 pods of 4 GPUs fit only the second clique.
TEST(ExtenderDraTest, AComputeDomainStaysWithinOneLabelledClique) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  testing::ApplyComputeDomainObjects(*s, "small", 9, "small-channel");
  std::vector<NodeId> first_rack;
  for (NodeId n = 0; n < static_cast<NodeId>(s->topology().nodes().size()); ++n) {
    if (s->topology().nodes()[n].rack == 2) first_rack.push_back(n);
  }
  ASSERT_EQ(first_rack.size(), 18u);
  for (size_t i = 0; i < first_rack.size(); ++i) {
    s->SetNodeClique(s->topology().nodes()[first_rack[i]].name, i < 9 ? "uuid.1" : "uuid.2");
  }
  ASSERT_TRUE(s->Filter(Args(PluginPod("taken", 1), *s), 1).error.empty());
  ASSERT_EQ(s->Bind(Binding("taken", s->topology().nodes()[first_rack[0]].name), 2), "");
  for (int i = 0; i < 9; ++i) {
    const std::string name = "c" + std::to_string(i);
    const FilterResult f = s->Filter(Args(DraPodJson(name, {"gpu4", "small-channel"}), *s), 10 + i);
    ASSERT_FALSE(f.feasible.empty()) << "pod " << i << ": " << (f.reasons.empty() ? f.error : f.reasons[0]);
    const NodeId node = f.feasible[0];
    EXPECT_NE(std::find(first_rack.begin() + 9, first_rack.end(), node), first_rack.end())
        << s->topology().nodes()[node].name << " is not in the second clique";
    ASSERT_EQ(s->Bind(Binding(name, s->topology().nodes()[node].name), 20 + i), "");
  }
}

// Kubernetes 1.35's Workload API: a pod's spec.workloadRef names a pod group inside a scheduling.k8s.io/v1alpha1
// Workload, whose gang minCount sizes the group, and each podGroupReplicaKey is a gang of its own: two replicas
// of one pod group are two reservations, not one group of pods from both.
TEST(ExtenderDraTest, EachReplicaOfAWorkloadPodGroupIsItsOwnGang) {
  ExtenderMetrics metrics;
  auto s = NewService(&metrics);
  const Json workload = {{"apiVersion", "scheduling.k8s.io/v1alpha1"},
                         {"kind", "Workload"},
                         {"metadata", {{"name", "trainer"}, {"namespace", "ml"}}},
                         {"spec", {{"podGroups", {{{"name", "workers"}, {"policy", {{"gang", {{"minCount", 2}}}}}}}}}}};
  ASSERT_TRUE(s->ApplyDraObject(DraKind::kWorkload, workload, false, 0).ok());
  for (const char* replica : {"r0", "r1"}) {
    Json pod = PluginPod(std::string("w-") + replica, 4);
    pod["spec"]["workloadRef"] = {{"name", "trainer"}, {"podGroup", "workers"}, {"podGroupReplicaKey", replica}};
    const FilterResult f = s->Filter(Args(pod, *s), 1);
    ASSERT_FALSE(f.feasible.empty()) << replica << ": " << (f.reasons.empty() ? f.error : f.reasons[0]);
  }
  EXPECT_EQ(s->Snapshot().reservations, 2);
  EXPECT_EQ(s->Snapshot().free_reserved_slots, 4);  // two pods per replica, none bound yet
}

}  // namespace
}  // namespace rackwise::k8s
