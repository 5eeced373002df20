// The API-server client and reflector against the fake API server replaying recorded LIST / WATCH / 410
// sequences (paginated lists, chunked watch streams with bookmarks, an ERROR 410 event, an HTTP 410, a
// failing list), answering bindings and evictions from its state (a conflict, a disruption budget's 429), and
// recording what the client sent.
#include <sstream>

#include "extender_fixture.h"
#include "kube_client.h"
#include "kube_sync.h"
#include "rackwise/testing/child_process.h"
#include "rackwise/testing/fake_api_server.h"

namespace rackwise::k8s::testing {
namespace {

using rackwise::testing::Eventually;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

using rackwise::testing::FakeApiServer;
using Route = FakeApiServer::Route;

// The fake API server with the nodes these tests bind to, started.
class ApiServer : public FakeApiServer {
 public:
  ApiServer() : FakeApiServer({.nodes = {"b0-r0000-n01", "b0-r0000-n02"}}) { started_ = Start(); }
  const absl::Status& started() const { return started_; }
  KubeConfig Config() const {
    KubeConfig c;
    c.source = "test";
    c.https = false;
    c.host = "127.0.0.1";
    c.port = port();
    c.token = "test-token";
    return c;
  }
  // The recorded LIST / WATCH sequences: the first pod list fails (500), then a list in two pages (continue c1,
  // resourceVersion 100), a watch that ends after an ADDED, a BOOKMARK and a DELETED (106), a watch that gets an
  // ERROR 410 event, relists (200), a plain HTTP 410 on a watch, and watches that stay open and quiet. Nodes: a
  // list, and a watch with one MODIFIED that stays open.
  void ScriptRecordedStreams() {
    const Route pods{.path = "/api/v1/pods"}, pod_watch{.path = "/api/v1/pods", .watch = true};
    Script({.path = "/api/v1/pods", .query = {{"continue", "c1"}}}, {.body = ReadTestData("pods_list_page2.json")},
           kAlways);
    Script(pods, {.status = 500, .body = R"({"kind":"Status","message":"etcdserver: leader changed"})"});
    Script(pods, {.body = ReadTestData("pods_list_page1.json")});
    Script(pods, {.body = ReadTestData("pods_list_relist.json")}, kAlways);
    Script(pod_watch, {.events = Lines(ReadTestData("pods_watch_1.jsonl"))});
    Script(pod_watch, {.events = Lines(ReadTestData("pods_watch_gone.jsonl"))});
    // A plain HTTP 410 on the watch request must also relist.
    Script(pod_watch,
           {.status = 410, .body = R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})"});
    Script(pod_watch, {.hold_open = true}, kAlways);
    const Route node_watch{.path = "/api/v1/nodes", .watch = true};
    Script({.path = "/api/v1/nodes"}, {.body = ReadTestData("nodes_list.json")}, kAlways);
    Script(node_watch, {.events = Lines(ReadTestData("nodes_watch_1.jsonl")), .hold_open = true});
    Script(node_watch, {.hold_open = true}, kAlways);
  }

 private:
  absl::Status started_;
};

TEST(KubeSyncReplay, ListWatchResumeRelistOnGoneAndBackoff) {
  ApiServer api;
  ASSERT_TRUE(api.started().ok()) << api.started();
  api.ScriptRecordedStreams();
  auto client = KubeClient::Create(api.Config());
  ASSERT_TRUE(client.ok()) << client.status();
  auto topology = Topology::Build(MixedCluster());
  ASSERT_TRUE(topology.ok());
  ExtenderMetrics metrics;
  ExtenderService service(std::make_unique<Topology>(std::move(*topology)), {}, client->get(), &metrics);
  SyncOptions so;
  so.backoff_initial_ms = 20;
  so.backoff_max_ms = 100;
  KubeSync sync(client->get(), &service, so);
  EXPECT_FALSE(service.synced());
  sync.Start();
  ASSERT_TRUE(Eventually([&] { return service.synced(); }));
  // Converges on the relisted state: c and d hold GPUs; a (deleted) and b-0 (gone from the relist) do not.
  ASSERT_TRUE(Eventually([&] { return sync.stats().relists_after_gone.load() >= 2 && service.NodeOfPod("ml/d"); }));
  ASSERT_TRUE(Eventually([&] { return !service.NodeOfPod("ml/b-0").has_value(); }));
  EXPECT_EQ(service.NodeOfPod("ml/c"), "b0-r0001-n01");
  EXPECT_EQ(service.NodeOfPod("ml/d"), "b0-r0001-n02");
  EXPECT_FALSE(service.NodeOfPod("ml/a").has_value());
  EXPECT_FALSE(service.NodeOfPod("kube-system/cpu-only").has_value());
  EXPECT_GE(sync.stats().errors.load(), 1);  // the failed first list
  ASSERT_TRUE(Eventually([&] {
    return service.WithLedger([](const Ledger& l) {
      auto n04 = l.topology().FindNode("b0-r0000-n04");
      return l.node_health(*n04) == NodeHealth::kUp;  // uncordoned by the node watch
    });
  }));
  service.WithLedger([](const Ledger& l) {
    EXPECT_EQ(l.allocation_count(), 2u);
    EXPECT_EQ(l.node_health(*l.topology().FindNode("b0-r0000-n03")), NodeHealth::kDown);
    EXPECT_TRUE(l.CheckInvariants().ok());
    return 0;
  });
  sync.Stop();
  std::vector<std::string> pod_watch_versions;
  std::string field_selector;
  for (const FakeApiServer::RecordedRequest& r : api.Requests("GET", "/api/v1/pods")) {
    if (!r.watch) continue;
    pod_watch_versions.push_back(r.param("resourceVersion"));
    field_selector = r.param("fieldSelector");
  }
  ASSERT_GE(pod_watch_versions.size(), 3u);
  EXPECT_EQ(pod_watch_versions[0], "100");  // from the paginated list
  EXPECT_EQ(pod_watch_versions[1], "106");  // resumed after the last event (bookmark 105, delete 106)
  EXPECT_EQ(pod_watch_versions[2], "200");  // after the relist that followed the 410 event
  EXPECT_EQ(field_selector, "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed");
}

TEST(KubeSyncReplay, EvictPostsAPolicyV1Eviction) {
  ApiServer api;
  ASSERT_TRUE(api.started().ok()) << api.started();
  ASSERT_TRUE(api.PutPod(MakePod("train-9", 8)).ok());
  // A PodDisruptionBudget says no, as the API server answers it.
  api.Script(
      {.method = "POST", .path = "/api/v1/namespaces/ml/pods/guarded/eviction"},
      {.status = 429,
       .body = R"({"kind":"Status","message":"Cannot evict pod as it would violate the pod's disruption budget."})"},
      FakeApiServer::kAlways);
  auto client = KubeClient::Create(api.Config());
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->EvictPod("ml", "train-9").ok());
  absl::Status refused = (*client)->EvictPod("ml", "guarded");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("disruption budget"), std::string::npos) << refused;
  const std::vector<FakeApiServer::RecordedRequest> evictions = api.Requests("POST", ".*/eviction");
  ASSERT_EQ(evictions.size(), 2u);
  EXPECT_EQ(evictions[0].path, "/api/v1/namespaces/ml/pods/train-9/eviction");
  const Json body = Json::parse(evictions[0].body);
  EXPECT_EQ(body["apiVersion"], "policy/v1");
  EXPECT_EQ(body["kind"], "Eviction");
  EXPECT_EQ(body["metadata"]["name"], "train-9");
  EXPECT_EQ(body["metadata"]["namespace"], "ml");
  EXPECT_EQ(evictions.back().header("Authorization"), "Bearer test-token");
}

// A pod already bound to a node: binding it again conflicts (409).
Json BoundPod(const std::string& name) {
  Json pod = MakePod(name, 8);
  pod["spec"]["nodeName"] = "b0-r0000-n02";
  return pod;
}

TEST(KubeSyncReplay, BindPostsTheBindingSubresource) {
  ApiServer api;
  ASSERT_TRUE(api.started().ok()) << api.started();
  Json train = MakePod("train-0", 8);
  train["metadata"]["uid"] = "uid-t0";
  ASSERT_TRUE(api.CreatePod(train).ok());
  ASSERT_TRUE(api.PutPod(BoundPod("conflict")).ok());
  auto client = KubeClient::Create(api.Config());
  ASSERT_TRUE(client.ok());
  BindingArgs b{"train-0", "ml", "uid-t0", "b0-r0000-n01"};
  ASSERT_TRUE((*client)->BindPod(b).ok());
  BindingArgs conflict{"conflict", "ml", "", "b0-r0000-n01"};
  absl::Status s = (*client)->BindPod(conflict);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("already assigned"), std::string::npos);
  const std::vector<FakeApiServer::RecordedRequest> bindings = api.Requests("POST", ".*/binding");
  ASSERT_EQ(bindings.size(), 2u);
  const Json body = Json::parse(bindings[0].body);
  EXPECT_EQ(body["kind"], "Binding");
  EXPECT_EQ(body["metadata"]["name"], "train-0");
  EXPECT_EQ(body["metadata"]["namespace"], "ml");
  EXPECT_EQ(body["metadata"]["uid"], "uid-t0");
  EXPECT_EQ(body["target"]["kind"], "Node");
  EXPECT_EQ(body["target"]["name"], "b0-r0000-n01");
  EXPECT_EQ(bindings.back().header("Authorization"), "Bearer test-token");
}

TEST(KubeSyncReplay, FailedBindingUndoesTheBooking) {
  ApiServer api;
  ASSERT_TRUE(api.started().ok()) << api.started();
  ASSERT_TRUE(api.PutPod(BoundPod("conflict")).ok());
  ASSERT_TRUE(api.CreatePod(MakePod("ok", 8)).ok());
  auto client = KubeClient::Create(api.Config());
  ASSERT_TRUE(client.ok());
  auto topology = Topology::Build(MixedCluster());
  ExtenderMetrics metrics;
  ExtenderService service(std::make_unique<Topology>(std::move(*topology)), {}, client->get(), &metrics);
  service.SetSynced(true);
  ExtenderArgs args;
  args.pod = MakePod("conflict", 8);
  args.SetNodeNames({"b0-r0000-n01"});
  ASSERT_EQ(service.Filter(args, 0).feasible.size(), 1u);
  std::string err = service.Bind({"conflict", "ml", "uid-ml-conflict", "b0-r0000-n01"}, 0);
  EXPECT_NE(err.find("already assigned"), std::string::npos) << err;
  EXPECT_EQ(service.WithLedger([](const Ledger& l) { return l.allocation_count(); }), 0u);
  args.pod = MakePod("ok", 8);
  ASSERT_EQ(service.Filter(args, 0).feasible.size(), 1u);
  EXPECT_EQ(service.Bind({"ok", "ml", "uid-ml-ok", "b0-r0000-n01"}, 0), "");
  EXPECT_EQ(service.NodeOfPod("ml/ok"), "b0-r0000-n01");
}

}  // namespace
}  // namespace rackwise::k8s::testing
