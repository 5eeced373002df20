// The preempt verb over real HTTP when GPUs come from DRA ResourceClaims (resource.k8s.io/v1 objects as the API
// server serves them, ResourceSlices as NVIDIA's driver publishes them): a preemptor whose GPUs come from a claim
// is counted with those GPUs and their watts, and victims holding claim GPUs free them in the plan. kube-scheduler
// proposes victims counting devices alone; the extender keeps only the nodes where the victims' going makes room
// under the rack's power cap.
#include <set>

#include "dra_test_objects.h"
#include "extender_fixture.h"

namespace rackwise::k8s::testing {
namespace {

std::set<std::string> Uids(const Json& victims) {
  std::set<std::string> out;
  for (const Json& p : victims["Pods"]) out.insert(p["UID"].get<std::string>());
  return out;
}

// ExtenderPreemptionArgs of a nodeCacheCapable extender: each node's proposed victims by UID.
std::string MetaArgs(const Json& pod, const std::vector<std::pair<std::string, std::string>>& victims) {
  Json meta = Json::object();
  for (const auto& [node, uid] : victims) meta[node] = {{"Pods", {{{"UID", uid}}}}, {"NumPDBViolations", 0}};
  return Json({{"Pod", pod}, {"NodeNameToVictims", nullptr}, {"NodeNameToMetaVictims", meta}}).dump();
}

Json WithPriority(Json pod, int priority) {
  pod["spec"]["priority"] = priority;
  return pod;
}

class HttpDraPreemptionTest : public ExtenderHttpFixture {
 protected:
  // A pod whose `gpus` GPUs come from a claim made from template gpu<gpus>, scheduled on `node` over HTTP, then
  // its claim allocated there (devices gpu-<first>..), as the scheduler's DRA plugin writes it before the bind.
  void RunDraPod(const std::string& name, int gpus, const std::string& node, int first_device) {
    const std::string tmpl = "gpu" + std::to_string(gpus);
    ASSERT_EQ(Schedule(WithPriority(DraPodJson(name, {tmpl}), 10), {node}), node) << name;
    std::vector<std::string> devices;
    for (int i = 0; i < gpus; ++i) devices.push_back("gpu-" + std::to_string(first_device + i));
    const Json claim = ClaimJson(name + "-" + tmpl, gpus, devices, node);
    ASSERT_TRUE(service_->ApplyDraObject(DraKind::kResourceClaim, claim, false, now_ms_).ok());
  }
  void ApplyTemplatesAndSlices() {
    for (int gpus : {4, 8}) {
      const std::string tmpl = "gpu" + std::to_string(gpus);
      ASSERT_TRUE(
          service_
              ->ApplyDraObject(DraKind::kResourceClaimTemplate, TemplateJson(tmpl, ClaimSpecJson(gpus)), false, now_ms_)
              .ok());
    }
    for (const char* node : {"b0-r0000-n01", "b0-r0000-n02", "b0-r0000-n03"}) {
      ASSERT_TRUE(service_->ApplyDraObject(DraKind::kResourceSlice, SliceJson(node, 8), false, now_ms_).ok());
    }
  }
};

// The H100 rack's 30 kW cap binds (10 kW idle + 7.7 kW per 8-GPU pod). n01 and n02 each run an 8-GPU DRA pod,
// n03 a 4-GPU one. kube-scheduler, counting devices only, proposes n01's pod and n03's pod for an urgent 8-GPU
// DRA pod. Evicting n03's pod frees the devices but not the power (10 + 15.4 + 7.7 = 33.1 kW > 30 kW): n03 is
// dropped, n01 keeps its victim. Were the preemptor's claim GPUs not counted, both proposals would pass as they
// came; were the victims' claim GPUs not freed, n01 would be dropped too.
TEST_F(HttpDraPreemptionTest, ADraPreemptorIsCountedWithItsClaimedGpusAndWatts) {
  StartExtender();
  ApplyTemplatesAndSlices();
  RunDraPod("a", 8, "b0-r0000-n01", 0);
  RunDraPod("b", 8, "b0-r0000-n02", 0);
  RunDraPod("small", 4, "b0-r0000-n03", 4);
  ASSERT_EQ(service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 3u);
  const Json urgent = WithPriority(DraPodJson("urgent", {"gpu8"}), 1000);
  Json f = Post("/filter", FilterBody(urgent, {"b0-r0000-n01", "b0-r0000-n03"}));
  ASSERT_TRUE(f["NodeNames"].empty()) << f.dump();  // no room: kube-scheduler turns to preemption

  Json r = Post("/preempt", MetaArgs(urgent, {{"b0-r0000-n01", "uid-a"}, {"b0-r0000-n03", "uid-small"}}));
  const Json& kept = r["NodeNameToMetaVictims"];
  ASSERT_EQ(kept.size(), 1u) << r.dump();
  EXPECT_EQ(Uids(kept["b0-r0000-n01"]), std::set<std::string>{"uid-a"});
  // Only n03 proposed: nothing can make room, so nothing is preempted.
  Json none = Post("/preempt", MetaArgs(urgent, {{"b0-r0000-n03", "uid-small"}}));
  EXPECT_TRUE(none["NodeNameToMetaVictims"].empty()) << none.dump();
}

// A pod of a ComputeDomain channel claim and no GPU of its own has nothing of rackwise's to preempt for: the
// proposal passes as kube-scheduler made it (its channel is not a GPU).
TEST_F(HttpDraPreemptionTest, AClaimWithoutGpusLeavesTheProposalAsItCame) {
  StartExtender();
  ApplyTemplatesAndSlices();
  RunDraPod("small", 4, "b0-r0000-n03", 4);
  const Json channel =
      TemplateJson("cd-channel", ClaimSpecJson(1, "compute-domain-default-channel.nvidia.com", "channel"));
  ASSERT_TRUE(service_->ApplyDraObject(DraKind::kResourceClaimTemplate, channel, false, now_ms_).ok());
  Json r = Post("/preempt",
                MetaArgs(WithPriority(DraPodJson("cd-only", {"cd-channel"}), 1000), {{"b0-r0000-n03", "uid-small"}}));
  EXPECT_EQ(Uids(r["NodeNameToMetaVictims"]["b0-r0000-n03"]), std::set<std::string>{"uid-small"}) << r.dump();
}

}  // namespace
}  // namespace rackwise::k8s::testing
