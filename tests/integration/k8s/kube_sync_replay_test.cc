// The API-server client and reflector against a local HTTP server that replays recorded LIST / WATCH / 410
// sequences (paginated lists, chunked watch streams with bookmarks, an ERROR 410 event, an HTTP 410, a
// failing list) and records the bindings it receives.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "extender_fixture.h"
#include "kube_client.h"
#include "kube_sync.h"
#include "rackwise/testing/child_process.h"

namespace rackwise::k8s::testing {
namespace {

using rackwise::testing::Eventually;

// Streams `lines` as a chunked watch body, then either ends or idles until `stop`.
void StreamLines(httplib::Response& res, std::vector<std::string> lines, bool idle, std::atomic<bool>* stop) {
  auto state = std::make_shared<std::pair<std::vector<std::string>, size_t>>(std::move(lines), 0);
  res.set_chunked_content_provider("application/json", [state, idle, stop](size_t, httplib::DataSink& sink) {
    if (state->second < state->first.size()) {
      std::string line = state->first[state->second++] + "\n";
      // Split each event over two chunks, as a real stream may.
      size_t half = line.size() / 2;
      sink.write(line.data(), half);
      sink.write(line.data() + half, line.size() - half);
      return true;
    }
    if (idle && !stop->load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return true;
    }
    sink.done();
    return true;
  });
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

class FakeApiServer {
 public:
  FakeApiServer() {
    server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (req.has_param("watch")) {
        pod_watch_versions_.push_back(req.get_param_value("resourceVersion"));
        field_selector_ = req.get_param_value("fieldSelector");
        int n = pod_watches_++;
        if (n == 0) return StreamLines(res, Lines(ReadTestData("pods_watch_1.jsonl")), false, &stop_);
        if (n == 1) return StreamLines(res, Lines(ReadTestData("pods_watch_gone.jsonl")), false, &stop_);
        if (n == 2) {  // a plain HTTP 410 on the watch request must also relist
          res.status = 410;
          res.set_content(R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})", "application/json");
          return;
        }
        return StreamLines(res, {}, true, &stop_);
      }
      int n = pod_lists_++;
      if (n == 0) {  // the first list fails: the reflector backs off and retries
        res.status = 500;
        res.set_content(R"({"kind":"Status","message":"etcdserver: leader changed"})", "application/json");
        return;
      }
      if (req.get_param_value("continue") == "c1")
        return res.set_content(ReadTestData("pods_list_page2.json"), "application/json");
      if (n == 1) return res.set_content(ReadTestData("pods_list_page1.json"), "application/json");
      res.set_content(ReadTestData("pods_list_relist.json"), "application/json");
    });
    server_.Get("/api/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      if (req.has_param("watch")) {
        int n = node_watches_++;
        return StreamLines(res, n == 0 ? Lines(ReadTestData("nodes_watch_1.jsonl")) : std::vector<std::string>{}, true,
                           &stop_);
      }
      res.set_content(ReadTestData("nodes_list.json"), "application/json");
    });
    server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction)", [this](const httplib::Request& req,
                                                                               httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      evictions_.push_back(Json::parse(req.body));
      eviction_paths_.push_back(req.path);
      authorization_ = req.get_header_value("Authorization");
      if (req.matches[2] == "guarded") {  // a PodDisruptionBudget says no, as the API server answers it
        res.status = 429;
        res.set_content(
            R"({"kind":"Status","message":"Cannot evict pod as it would violate the pod's disruption budget."})",
            "application/json");
        return;
      }
      res.status = 201;
      res.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
    });
    server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)", [this](const httplib::Request& req,
                                                                              httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      bindings_.push_back(Json::parse(req.body));
      authorization_ = req.get_header_value("Authorization");
      if (req.matches[2] == "conflict") {
        res.status = 409;
        res.set_content(R"({"kind":"Status","message":"pod conflict is already assigned"})", "application/json");
        return;
      }
      res.status = 201;
      res.set_content(req.body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() {
    stop_ = true;
    server_.stop();
    thread_.join();
  }
  KubeConfig Config() const {
    KubeConfig c;
    c.source = "test";
    c.https = false;
    c.host = "127.0.0.1";
    c.port = port_;
    c.token = "test-token";
    return c;
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  int pod_lists_ = 0, pod_watches_ = 0, node_watches_ = 0;
  std::vector<std::string> pod_watch_versions_;
  std::string field_selector_, authorization_;
  std::vector<Json> bindings_;
  std::vector<Json> evictions_;
  std::vector<std::string> eviction_paths_;
};

TEST(KubeSyncReplay, ListWatchResumeRelistOnGoneAndBackoff) {
  FakeApiServer api;
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
  std::lock_guard<std::mutex> lock(api.mu_);
  ASSERT_GE(api.pod_watch_versions_.size(), 3u);
  EXPECT_EQ(api.pod_watch_versions_[0], "100");  // from the paginated list
  EXPECT_EQ(api.pod_watch_versions_[1], "106");  // resumed after the last event (bookmark 105, delete 106)
  EXPECT_EQ(api.pod_watch_versions_[2], "200");  // after the relist that followed the 410 event
  EXPECT_EQ(api.field_selector_, "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed");
}

TEST(KubeSyncReplay, EvictPostsAPolicyV1Eviction) {
  FakeApiServer api;
  auto client = KubeClient::Create(api.Config());
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->EvictPod("ml", "train-9").ok());
  absl::Status refused = (*client)->EvictPod("ml", "guarded");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("disruption budget"), std::string::npos) << refused;
  std::lock_guard<std::mutex> lock(api.mu_);
  ASSERT_EQ(api.evictions_.size(), 2u);
  EXPECT_EQ(api.eviction_paths_[0], "/api/v1/namespaces/ml/pods/train-9/eviction");
  const Json& body = api.evictions_[0];
  EXPECT_EQ(body["apiVersion"], "policy/v1");
  EXPECT_EQ(body["kind"], "Eviction");
  EXPECT_EQ(body["metadata"]["name"], "train-9");
  EXPECT_EQ(body["metadata"]["namespace"], "ml");
  EXPECT_EQ(api.authorization_, "Bearer test-token");
}

TEST(KubeSyncReplay, BindPostsTheBindingSubresource) {
  FakeApiServer api;
  auto client = KubeClient::Create(api.Config());
  ASSERT_TRUE(client.ok());
  BindingArgs b{"train-0", "ml", "uid-t0", "b0-r0000-n01"};
  ASSERT_TRUE((*client)->BindPod(b).ok());
  BindingArgs conflict{"conflict", "ml", "", "b0-r0000-n01"};
  absl::Status s = (*client)->BindPod(conflict);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("already assigned"), std::string::npos);
  std::lock_guard<std::mutex> lock(api.mu_);
  ASSERT_EQ(api.bindings_.size(), 2u);
  const Json& body = api.bindings_[0];
  EXPECT_EQ(body["kind"], "Binding");
  EXPECT_EQ(body["metadata"]["name"], "train-0");
  EXPECT_EQ(body["metadata"]["namespace"], "ml");
  EXPECT_EQ(body["metadata"]["uid"], "uid-t0");
  EXPECT_EQ(body["target"]["kind"], "Node");
  EXPECT_EQ(body["target"]["name"], "b0-r0000-n01");
  EXPECT_EQ(api.authorization_, "Bearer test-token");
}

TEST(KubeSyncReplay, FailedBindingUndoesTheBooking) {
  FakeApiServer api;
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
