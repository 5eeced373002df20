// The preempt verb over real HTTP, with ExtenderPreemptionArgs exactly as kube-scheduler sends them
// (k8s.io/kube-scheduler/extender/v1: PascalCase keys, null for the unset victims map, MetaVictims with
// nodeCacheCapable and full Pods without). The core chooses among the proposed victims; these tests check the
// answer against what the cluster makes the only right one.
#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "extender_fixture.h"

namespace rackwise::k8s::testing {
namespace {

constexpr int64_t kHourMs = 3'600'000;

Json WithPriority(Json pod, int priority) {
  pod["spec"]["priority"] = priority;
  return pod;
}

std::string Tray(int rack, int tray) { return absl::StrFormat("b1-r%04d-n%02d", rack, tray); }

// ExtenderPreemptionArgs as kube-scheduler sends it to a nodeCacheCapable extender: each node's victims by UID.
std::string MetaArgs(const Json& pod, const std::vector<std::pair<std::string, std::vector<std::string>>>& victims) {
  Json meta = Json::object();
  for (const auto& [node, uids] : victims) {
    Json pods = Json::array();
    for (const std::string& uid : uids) pods.push_back({{"UID", uid}});
    meta[node] = {{"Pods", pods}, {"NumPDBViolations", 0}};
  }
  return Json({{"Pod", pod}, {"NodeNameToVictims", nullptr}, {"NodeNameToMetaVictims", meta}}).dump();
}

std::set<std::string> Uids(const Json& victims) {
  std::set<std::string> out;
  for (const Json& p : victims["Pods"]) out.insert(p["UID"].get<std::string>());
  return out;
}

class HttpPreemptionTest : public ExtenderHttpFixture {
 protected:
  size_t Allocations() {
    return service_->WithLedger([](const Ledger& l) { return l.allocation_count(); });
  }
};

// Both NVL72 racks are full of 4-GPU pods of priority 10, rack 0's running two hours longer. An 18-pod gang of
// 4-GPU pods with nvlink: required (72 GPUs: one whole rack) arrives at priority 1000. kube-scheduler proposes, on
// each of the 36 trays, the pod there. The gang preempts as one: exactly the 18 pods of ONE rack (the fewest that
// make room), the cheaper rack (less work lost); one node answered, the other 17 victims evicted by the extender.
TEST_F(HttpPreemptionTest, AGangTakesItsVictimsFromOneNvl72Rack) {
  RecordingBinder binder;
  StartExtender(/*synced=*/true, &binder);
  std::vector<std::pair<std::string, std::vector<std::string>>> proposed;
  for (int rack = 0; rack < 2; ++rack) {
    for (int tray = 1; tray <= 18; ++tray) {
      const std::string name = absl::StrCat(rack == 0 ? "old-" : "new-", tray);
      ASSERT_EQ(Schedule(WithPriority(MakePod(name, 4), 10), {Tray(rack, tray)}), Tray(rack, tray));
      proposed.push_back({Tray(rack, tray), {"uid-ml-" + name}});
    }
    now_ms_ += 2 * kHourMs;
  }
  const Json annotations = {
      {"rackwise.io/nvlink", "required"}, {"rackwise.io/group", "big"}, {"rackwise.io/group-size", "18"}};
  const Json gang_pod = WithPriority(MakePod("big-0", 4, annotations), 1000);
  std::vector<std::string> trays;
  for (const auto& [node, uids] : proposed) trays.push_back(node);
  Json f = Post("/filter", FilterBody(gang_pod, trays));
  ASSERT_TRUE(f["NodeNames"].empty()) << f.dump();  // the cluster is full: kube-scheduler turns to preemption

  Json r = Post("/preempt", MetaArgs(gang_pod, proposed));
  const Json& kept = r["NodeNameToMetaVictims"];
  ASSERT_EQ(kept.size(), 1u) << r.dump();  // kube-scheduler deletes on the node it nominates: one node
  const std::string nominated = kept.begin().key();
  EXPECT_TRUE(absl::StartsWith(nominated, "b1-r0001-")) << nominated;
  ASSERT_EQ(kept[nominated]["Pods"].size(), 1u);
  std::set<std::string> victims;  // as pod keys
  for (const std::string& uid : Uids(kept[nominated]))
    victims.insert("ml/" + uid.substr(std::string("uid-ml-").size()));
  for (const std::string& key : binder.evicted) EXPECT_TRUE(victims.insert(key).second) << key << " twice";
  std::set<std::string> rack1;
  for (int tray = 1; tray <= 18; ++tray) rack1.insert(absl::StrCat("ml/new-", tray));
  EXPECT_EQ(victims, rack1);  // 18 victims, all in rack 1: none in rack 0, none beyond the fewest
  EXPECT_EQ(binder.evicted.size(), 17u);
  EXPECT_EQ(Allocations(), 36u);  // nothing is released before the API server says the victims are gone

  // The victims go (the API server's deletions); the gang's next filter reserves rack 1 for all 18 pods.
  for (const std::string& key : rack1) {
    PodInfo gone;
    gone.namespace_ = "ml";
    gone.name = key.substr(3);
    service_->DeletePod(gone);
  }
  Json again = Post("/filter", FilterBody(gang_pod, trays));
  ASSERT_EQ(again["NodeNames"].size(), 18u) << again.dump();
  for (const Json& node : again["NodeNames"]) EXPECT_TRUE(absl::StartsWith(node.get<std::string>(), "b1-r0001-"));
}

// A PodDisruptionBudget refuses the eviction of one of the gang's victims on another node (the API server's 429):
// the call fails, so kube-scheduler deletes nothing on the node it would have nominated.
TEST_F(HttpPreemptionTest, AGangVictimProtectedByAPodDisruptionBudgetStopsThePreemption) {
  RecordingBinder binder;
  StartExtender(/*synced=*/true, &binder);
  std::vector<std::pair<std::string, std::vector<std::string>>> proposed;
  for (int tray = 1; tray <= 18; ++tray) {
    ASSERT_EQ(Schedule(WithPriority(MakePod(absl::StrCat("low-", tray), 4), 10), {Tray(0, tray)}), Tray(0, tray));
    proposed.push_back({Tray(0, tray), {absl::StrCat("uid-ml-low-", tray)}});
  }
  for (int tray = 1; tray <= 18; ++tray) binder.refuse.insert(absl::StrCat("ml/low-", tray));
  // Rack 1 holds a pod of priority 1000 on every tray: only rack 0 can be cleared.
  for (int tray = 1; tray <= 18; ++tray) {
    ASSERT_EQ(Schedule(WithPriority(MakePod(absl::StrCat("high-", tray), 4), 1000), {Tray(1, tray)}), Tray(1, tray));
  }
  const Json annotations = {
      {"rackwise.io/nvlink", "required"}, {"rackwise.io/group", "big"}, {"rackwise.io/group-size", "18"}};
  auto res = client_->Post("/preempt", MetaArgs(WithPriority(MakePod("big-0", 4, annotations), 1000), proposed),
                           "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503) << res->body;
  EXPECT_NE(res->body.find("PodDisruptionBudget"), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("nothing preempted"), std::string::npos) << res->body;
  EXPECT_TRUE(binder.evicted.empty());
}

// The H100 rack's 30 kW cap binds (10 kW idle + 7.7 kW per 8-GPU pod). Full node n01 (an 8-GPU pod), n02 (an
// 8-GPU pod kube-scheduler does not propose), n03 half full (a 4-GPU pod). kube-scheduler, counting GPUs only,
// proposes n01 (its pod) and n03 (its pod). Evicting n03's pod gives the 8 GPUs but not the power (10 + 15.4 +
// 7.7 = 33.1 kW > 30 kW): n03 is dropped; n01 keeps its victim.
TEST_F(HttpPreemptionTest, ANodeWherePreemptionCannotMakeRoomUnderTheCapIsDropped) {
  StartExtender();
  ASSERT_EQ(Schedule(WithPriority(MakePod("a", 8), 10), {"b0-r0000-n01"}), "b0-r0000-n01");
  ASSERT_EQ(Schedule(WithPriority(MakePod("b", 8), 10), {"b0-r0000-n02"}), "b0-r0000-n02");
  ASSERT_EQ(Schedule(WithPriority(MakePod("small", 4), 10), {"b0-r0000-n03"}), "b0-r0000-n03");
  const Json urgent = WithPriority(MakePod("urgent", 8), 1000);
  Json r = Post("/preempt", MetaArgs(urgent, {{"b0-r0000-n01", {"uid-ml-a"}}, {"b0-r0000-n03", {"uid-ml-small"}}}));
  const Json& kept = r["NodeNameToMetaVictims"];
  ASSERT_EQ(kept.size(), 1u) << r.dump();
  EXPECT_EQ(Uids(kept["b0-r0000-n01"]), std::set<std::string>{"uid-ml-a"});
  // Only n03 proposed: nothing to answer (an empty map, which kube-scheduler reads as "no preemption").
  Json none = Post("/preempt", MetaArgs(urgent, {{"b0-r0000-n03", {"uid-ml-small"}}}));
  EXPECT_TRUE(none["NodeNameToMetaVictims"].empty()) << none.dump();
  EXPECT_EQ(Allocations(), 3u);
}

// Four 2-GPU pods fill node n01; a 4-GPU pod needs two of them gone. kube-scheduler (nodeCacheCapable: false)
// proposes all four as full Pods. The answer is the fewest that make room, the ones that lose the least work (the
// youngest), never the pod whose priority is above the preemptor's; a pod rackwise holds no GPUs for (a CPU pod
// kube-scheduler needed gone) is kept as proposed.
TEST_F(HttpPreemptionTest, VictimsAreReducedToTheFewestCheapest) {
  StartExtender();
  for (int i = 1; i <= 4; ++i) {
    ASSERT_EQ(Schedule(WithPriority(MakePod(absl::StrCat("p", i), 2), i == 4 ? 5000 : 10), {"b0-r0001-n01"}),
              "b0-r0001-n01");
    now_ms_ += kHourMs;
  }
  Json pods = Json::array();
  for (int i = 1; i <= 4; ++i) {
    Json p = WithPriority(MakePod(absl::StrCat("p", i), 2), i == 4 ? 5000 : 10);
    p["spec"]["nodeName"] = "b0-r0001-n01";
    p["status"]["phase"] = "Running";
    pods.push_back(p);
  }
  Json cpu_pod = MakePod("cpu-only", 0);
  cpu_pod["spec"]["nodeName"] = "b0-r0001-n01";
  pods.push_back(cpu_pod);
  Json args = {{"Pod", WithPriority(MakePod("urgent", 4), 1000)},
               {"NodeNameToVictims", {{"b0-r0001-n01", {{"Pods", pods}, {"NumPDBViolations", 1}}}}},
               {"NodeNameToMetaVictims", nullptr}};
  Json r = Post("/preempt", args.dump());
  const Json& kept = r["NodeNameToMetaVictims"]["b0-r0001-n01"];
  EXPECT_EQ(Uids(kept), (std::set<std::string>{"uid-ml-p2", "uid-ml-p3", "uid-ml-cpu-only"})) << r.dump();
  EXPECT_EQ(kept["NumPDBViolations"], 1);
  // Upstream reads the answer with these exact keys and nothing else.
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(kept.size(), 2u);
}

// Malformed bodies get a 400 naming what is wrong, never a crash; the ledger is untouched and the server goes on.
TEST_F(HttpPreemptionTest, MalformedPayloadsAreClearErrors) {
  StartExtender();
  ASSERT_EQ(Schedule(WithPriority(MakePod("a", 8), 10), {"b0-r0000-n01"}), "b0-r0000-n01");
  const std::string pod = WithPriority(MakePod("urgent", 8), 1000).dump();
  const std::pair<std::string, std::string> cases[] = {
      {"{\"Pod\":", "invalid JSON at byte"},
      {"[]", "expected a JSON object"},
      {"{\"Pod\":5}", "Pod: expected an object"},
      {"{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":[1]}", "NodeNameToMetaVictims: expected an object"},
      {"{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"b0-r0000-n01\":{\"Pods\":\"a\"}}}",
       ".Pods: expected an array"},
      {"{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"b0-r0000-n01\":{\"Pods\":[{\"UID\":\"\"}]}}}",
       "a victim without a UID"},
      {"{\"Pod\":" + pod + ",\"NodeNameToMetaVictims\":{\"b0-r0000-n01\":{\"Pods\":[],\"NumPDBViolations\":\"x\"}}}",
       "NumPDBViolations: expected a count"},
      {"{\"Pod\":{\"spec\":{\"priority\":\"high\"}},\"NodeNameToMetaVictims\":{}}", "spec.priority"},
      {"{\"Pod\":{\"status\":{\"startTime\":\"yesterday\"}},\"NodeNameToMetaVictims\":{}}", "status.startTime"},
      {std::string(100, '[') + std::string(100, ']'), "nested deeper"},
  };
  for (const auto& [body, why] : cases) {
    auto res = client_->Post("/preempt", body, "application/json");
    ASSERT_TRUE(res) << body;
    EXPECT_EQ(res->status, 400) << body;
    Json error = Json::parse(res->body, nullptr, false);
    ASSERT_TRUE(error.is_object()) << res->body;
    EXPECT_NE(error["Error"].get<std::string>().find(why), std::string::npos) << body << " -> " << res->body;
  }
  Json r = Post("/preempt", MetaArgs(WithPriority(MakePod("urgent", 8), 1000), {{"b0-r0000-n01", {"uid-ml-a"}}}));
  EXPECT_EQ(Uids(r["NodeNameToMetaVictims"]["b0-r0000-n01"]), std::set<std::string>{"uid-ml-a"});
  EXPECT_EQ(Allocations(), 1u);
}

}  // namespace
}  // namespace rackwise::k8s::testing
