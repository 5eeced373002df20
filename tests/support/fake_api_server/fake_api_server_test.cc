// FakeApiServer against a plain HTTP client (not rackwise's KubeClient, whose tests run against it): what the
// real API server does that tests lean on, and the fault and recording surface.
#include "rackwise/testing/fake_api_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <memory>
#include <thread>

#include "rackwise/testing/child_process.h"

namespace rackwise::testing {
namespace {

using Json = FakeApiServer::Json;

Json Pod(const std::string& name, const std::string& node = "", const std::string& phase = "Pending") {
  Json pod = {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}}},
              {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}}}}}}}},
              {"status", {{"phase", phase}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

std::vector<std::string> NamesOf(const Json& items) {
  std::vector<std::string> names;
  for (const Json& item : items) names.push_back(item["metadata"]["name"]);
  return names;
}

class FakeApiServerHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api_.Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", api_.port());
  }

  // GET target: the status and the body as JSON (null when it is not JSON).
  std::pair<int, Json> Get(const std::string& target) {
    httplib::Result res = client_->Get(target.c_str());
    if (!res) return {0, nullptr};
    return {res->status, Json::parse(res->body, nullptr, false)};
  }
  int Post(const std::string& path, const Json& body, const httplib::Headers& headers = {}) {
    httplib::Result res = client_->Post(path.c_str(), headers, body.dump(), "application/json");
    return res ? res->status : 0;
  }
  // The events of a watch (GET target), until the server ends the stream or `max` have come; *seen counts them
  // as they come.
  std::vector<Json> WatchEvents(const std::string& target, size_t max = std::numeric_limits<size_t>::max(),
                                std::atomic<size_t>* seen = nullptr) {
    httplib::Client watcher("127.0.0.1", api_.port());
    watcher.set_read_timeout(20);
    std::string buffer;
    std::vector<Json> events;
    watcher.Get(target.c_str(), [&](const char* data, size_t n) {
      buffer.append(data, n);
      for (size_t nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n')) {
        events.push_back(Json::parse(buffer.substr(0, nl)));
        buffer.erase(0, nl + 1);
        if (seen != nullptr) ++*seen;
      }
      return events.size() < max;
    });
    return events;
  }
  static std::string TypesAndNames(const std::vector<Json>& events) {
    std::string out;
    for (const Json& e : events) {
      const Json& object = e.at("object");
      const std::string name = object.contains("metadata") ? object["metadata"].value("name", "") : "";
      out += e.at("type").get<std::string>() + " " + name + ";";
    }
    return out;
  }

  FakeApiServer api_{{.nodes = {"n1", "n2"}}};
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(FakeApiServerHttpTest, ListPagesThroughOneSnapshot) {
  for (const char* name : {"p1", "p2", "p3", "p4", "p5"}) ASSERT_TRUE(api_.CreatePod(Pod(name)).ok());
  auto [status, first] = Get("/api/v1/pods?limit=2");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(NamesOf(first["items"]), (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(first["metadata"]["remainingItemCount"], 3);
  const std::string rv = first["metadata"]["resourceVersion"];
  // Changes after the first page do not show up in the pages of the same list.
  ASSERT_TRUE(api_.CreatePod(Pod("p0")).ok());
  ASSERT_TRUE(api_.DeletePod("ml", "p4").ok());
  auto [status2, second] = Get("/api/v1/pods?limit=2&continue=" + first["metadata"]["continue"].get<std::string>());
  ASSERT_EQ(status2, 200);
  EXPECT_EQ(NamesOf(second["items"]), (std::vector<std::string>{"p3", "p4"}));
  EXPECT_EQ(second["metadata"]["resourceVersion"], rv);
  auto [status3, third] = Get("/api/v1/pods?limit=2&continue=" + second["metadata"]["continue"].get<std::string>());
  ASSERT_EQ(status3, 200);
  EXPECT_EQ(NamesOf(third["items"]), (std::vector<std::string>{"p5"}));
  EXPECT_FALSE(third["metadata"].contains("continue"));
  // A new list sees them; without a limit it is one page.
  auto [status4, whole] = Get("/api/v1/pods");
  EXPECT_EQ(NamesOf(whole["items"]), (std::vector<std::string>{"p0", "p1", "p2", "p3", "p5"}));
  EXPECT_FALSE(whole["metadata"].contains("continue"));
  EXPECT_EQ(whole["kind"], "PodList");
  EXPECT_EQ(Get("/api/v1/pods?limit=2&continue=garbage").first, 400);
}

TEST_F(FakeApiServerHttpTest, ContinueTokenFromBeforeACompactionIsExpired) {
  for (const char* name : {"p1", "p2", "p3"}) ASSERT_TRUE(api_.CreatePod(Pod(name)).ok());
  auto [status, first] = Get("/api/v1/pods?limit=1");
  ASSERT_EQ(status, 200);
  api_.Compact();
  auto [gone, body] = Get("/api/v1/pods?limit=1&continue=" + first["metadata"]["continue"].get<std::string>());
  EXPECT_EQ(gone, 410);
  EXPECT_EQ(body["reason"], "Expired");
}

TEST(FakeApiServerPages, MaxPageItemsCapsALimitAsAServerMay) {
  FakeApiServer api({.nodes = {"n1"}, .max_page_items = 2});
  ASSERT_TRUE(api.Start().ok());
  for (const char* name : {"p1", "p2", "p3"}) ASSERT_TRUE(api.CreatePod(Pod(name, "n1", "Running")).ok());
  httplib::Client client("127.0.0.1", api.port());
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    httplib::Result res = client.Get(
        ("/api/v1/pods?limit=500&fieldSelector=spec.nodeName%3Dn1" + (token.empty() ? "" : "&continue=" + token))
            .c_str());
    ASSERT_TRUE(res && res->status == 200);
    const Json page = Json::parse(res->body);
    EXPECT_LE(page["items"].size(), 2u);
    for (const std::string& n : NamesOf(page["items"])) names.push_back(n);
    EXPECT_FALSE(page["metadata"].contains("remainingItemCount"));  // a filtered list does not count
    token = page["metadata"].value("continue", "");
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(names, (std::vector<std::string>{"p1", "p2", "p3"}));
}

TEST_F(FakeApiServerHttpTest, FieldSelectorsSelectAndUnknownFieldsAreRefused) {
  ASSERT_TRUE(api_.PutPod(Pod("run1", "n1", "Running")).ok());
  ASSERT_TRUE(api_.PutPod(Pod("run2", "n2", "Running")).ok());
  ASSERT_TRUE(api_.PutPod(Pod("done", "n1", "Succeeded")).ok());
  ASSERT_TRUE(api_.PutPod(Pod("pending")).ok());
  EXPECT_EQ(NamesOf(Get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1").second["items"]),
            (std::vector<std::string>{"done", "run1"}));
  EXPECT_EQ(NamesOf(Get("/api/v1/pods?fieldSelector=spec.nodeName!%3D,status.phase!%3DSucceeded").second["items"]),
            (std::vector<std::string>{"run1", "run2"}));
  EXPECT_EQ(NamesOf(Get("/api/v1/pods?fieldSelector=metadata.name%3D%3Dpending").second["items"]),
            (std::vector<std::string>{"pending"}));
  EXPECT_EQ(NamesOf(Get("/api/v1/nodes?fieldSelector=metadata.name%3Dn2").second["items"]),
            (std::vector<std::string>{"n2"}));
  auto [status, refusal] = Get("/api/v1/pods?fieldSelector=spec.schedulerName%3Dx");
  EXPECT_EQ(status, 400);
  EXPECT_EQ(refusal["kind"], "Status");
  EXPECT_NE(refusal["message"].get<std::string>().find("spec.schedulerName"), std::string::npos);
}

TEST_F(FakeApiServerHttpTest, WatchFromAResourceVersionSeesExactlyTheLaterChanges) {
  ASSERT_TRUE(api_.CreatePod(Pod("a")).ok());
  ASSERT_TRUE(api_.CreatePod(Pod("b")).ok());
  const int64_t from = api_.resource_version();
  ASSERT_TRUE(api_.PutPod(Pod("b", "", "Running")).ok());
  ASSERT_TRUE(api_.CreatePod(Pod("c")).ok());
  const int64_t middle = api_.resource_version();
  ASSERT_TRUE(api_.DeletePod("ml", "a").ok());
  // The last change: a watch that has it has had everything before it, so nothing else may come between.
  ASSERT_TRUE(api_.CreatePod(Pod("zz-last")).ok());
  const std::vector<Json> events = WatchEvents("/api/v1/pods?watch=1&resourceVersion=" + std::to_string(from), 4);
  EXPECT_EQ(TypesAndNames(events), "MODIFIED b;ADDED c;DELETED a;ADDED zz-last;");
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(events[i]["object"]["metadata"]["resourceVersion"], std::to_string(from + 1 + i));
  EXPECT_EQ(TypesAndNames(WatchEvents("/api/v1/pods?watch=true&resourceVersion=" + std::to_string(middle), 2)),
            "DELETED a;ADDED zz-last;");
  // Without a resourceVersion: the objects there now, as ADDED, first.
  EXPECT_EQ(TypesAndNames(WatchEvents("/api/v1/pods?watch=1&timeoutSeconds=1")), "ADDED b;ADDED c;ADDED zz-last;");
  // Other collections too.
  ASSERT_TRUE(api_.PutObject({{"apiVersion", "resource.k8s.io/v1"},
                              {"kind", "ResourceClaim"},
                              {"metadata", {{"name", "claim"}, {"namespace", "ml"}}}})
                  .ok());
  EXPECT_EQ(TypesAndNames(WatchEvents(
                "/apis/resource.k8s.io/v1/resourceclaims?watch=1&resourceVersion=" + std::to_string(middle), 1)),
            "ADDED claim;");
}

TEST_F(FakeApiServerHttpTest, WatchWithASelectorSeesObjectsEnterAndLeaveIt) {
  ASSERT_TRUE(api_.CreatePod(Pod("p")).ok());
  const std::string from = std::to_string(api_.resource_version());
  ASSERT_EQ(Post("/api/v1/namespaces/ml/pods/p/binding", {{"target", {{"name", "n1"}}}}), 201);
  ASSERT_TRUE(api_.PutPod(Pod("p", "n1", "Succeeded")).ok());
  ASSERT_TRUE(api_.CreatePod(Pod("never-selected")).ok());
  ASSERT_TRUE(api_.PutPod(Pod("zz-last", "n2", "Running")).ok());  // the last change (see above)
  EXPECT_EQ(TypesAndNames(WatchEvents("/api/v1/pods?watch=1&resourceVersion=" + from +
                                          "&fieldSelector=spec.nodeName!%3D,status.phase!%3DSucceeded",
                                      3)),
            "ADDED p;DELETED p;ADDED zz-last;");
}

TEST_F(FakeApiServerHttpTest, WatchFromBeforeACompactionGetsGoneAndOpenWatchesEndWithIt) {
  ASSERT_TRUE(api_.CreatePod(Pod("a")).ok());
  const std::string old = std::to_string(api_.resource_version());
  ASSERT_TRUE(api_.CreatePod(Pod("b")).ok());
  std::vector<Json> open_watch;
  std::atomic<size_t> seen{0};
  std::thread watcher([&] {
    open_watch = WatchEvents("/api/v1/pods?watch=1&resourceVersion=" + old, std::numeric_limits<size_t>::max(), &seen);
  });
  // The open watch has seen b: it is streaming when the compaction comes.
  const std::string why = WaitFor(
      "the watch's first event", [&] { return seen.load() >= 1; }, std::chrono::seconds(20));
  api_.Compact();
  watcher.join();
  ASSERT_EQ(why, "");
  EXPECT_EQ(TypesAndNames(open_watch), "ADDED b;ERROR ;");
  EXPECT_EQ(open_watch.back()["object"]["code"], 410);
  const std::vector<Json> gone = WatchEvents("/api/v1/pods?watch=1&resourceVersion=" + old);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0]["type"], "ERROR");
  EXPECT_EQ(gone[0]["object"]["code"], 410);
  EXPECT_EQ(gone[0]["object"]["reason"], "Expired");
  // From now on it watches again.
  const std::string now = std::to_string(api_.resource_version());
  ASSERT_TRUE(api_.CreatePod(Pod("c")).ok());
  EXPECT_EQ(TypesAndNames(WatchEvents("/api/v1/pods?watch=1&resourceVersion=" + now, 1)), "ADDED c;");
}

TEST_F(FakeApiServerHttpTest, BindingSetsTheNodeOnceAndConflictsAfterwards) {
  ASSERT_TRUE(api_.CreatePod(Pod("p")).ok());
  ASSERT_TRUE(api_.CreatePod(Pod("q")).ok());
  const Json binding = {{"kind", "Binding"}, {"metadata", {{"uid", "uid-p"}}}, {"target", {{"name", "n1"}}}};
  EXPECT_EQ(Post("/api/v1/namespaces/ml/pods/p/binding", binding), 201);
  EXPECT_EQ(api_.BoundPods(), (std::vector<std::string>{"ml/p uid-p n1 4"}));
  EXPECT_EQ(Post("/api/v1/namespaces/ml/pods/p/binding", binding), 409);
  EXPECT_EQ(Post("/api/v1/namespaces/ml/pods/q/binding", binding), 409);  // the uid names p
  EXPECT_EQ(Post("/api/v1/namespaces/ml/pods/nobody/binding", binding), 404);
  EXPECT_EQ(Post("/api/v1/namespaces/ml/pods/q/binding", {{"target", {{"name", "n9"}}}}), 400);
  EXPECT_EQ(api_.BoundPods(), (std::vector<std::string>{"ml/p uid-p n1 4"}));
  const std::vector<FakeApiServer::RecordedRequest> sent = api_.Requests("POST", ".*/binding");
  ASSERT_EQ(sent.size(), 5u);
  EXPECT_EQ(Json::parse(sent[0].body), binding);
}

TEST_F(FakeApiServerHttpTest, EvictionDeletesThePod) {
  ASSERT_TRUE(api_.PutPod(Pod("p", "n1", "Running")).ok());
  const Json eviction = {{"apiVersion", "policy/v1"}, {"kind", "Eviction"}};
  EXPECT_EQ(Post("/api/v1/namespaces/ml/pods/p/eviction", eviction), 201);
  EXPECT_TRUE(api_.BoundPods().empty());
  EXPECT_EQ(Post("/api/v1/namespaces/ml/pods/p/eviction", eviction), 404);
}

TEST_F(FakeApiServerHttpTest, ScriptedAnswersComeFirstAndRequestsAreRecorded) {
  ASSERT_TRUE(api_.CreatePod(Pod("p")).ok());
  const FakeApiServer::Route list{.path = "/api/v1/pods"};
  api_.Script({.path = "/api/v1/pods", .query = {{"continue", "c1"}}}, {.body = R"({"items":[],"page":2})"},
              FakeApiServer::kAlways);
  api_.Script(list, {.status = 500, .body = R"({"kind":"Status"})"}, 2);
  api_.Script({.path = "/api/v1/pods", .watch = true}, {.events = {R"({"type":"BOOKMARK","n":1})"}});
  EXPECT_EQ(Get("/api/v1/pods").first, 500);
  EXPECT_EQ(Get("/api/v1/pods?continue=c1").second["page"], 2);
  EXPECT_EQ(Get("/api/v1/pods").first, 500);
  EXPECT_EQ(NamesOf(Get("/api/v1/pods").second["items"]), (std::vector<std::string>{"p"}));  // the state's again
  EXPECT_EQ(Get("/api/v1/pods?continue=c1").second["page"], 2);
  const std::vector<Json> scripted = WatchEvents("/api/v1/pods?watch=1&resourceVersion=7");
  ASSERT_EQ(scripted.size(), 1u);
  EXPECT_EQ(scripted[0]["n"], 1);
  // Scripts may answer any path, also ones the fake does not serve.
  api_.Script({.method = "POST", .path = "/api/v1/namespaces/ml/pods/p/eviction"},
              {.status = 429, .body = R"({"kind":"Status","message":"disruption budget"})"});
  EXPECT_EQ(Post("/api/v1/namespaces/ml/pods/p/eviction", Json::object(), {{"Authorization", "Bearer t"}}), 429);
  EXPECT_EQ(Post("/api/v1/namespaces/ml/pods/p/eviction", Json::object()), 201);  // the state's answer
  const std::vector<FakeApiServer::RecordedRequest> lists = api_.Requests("GET", "/api/v1/pods");
  ASSERT_EQ(lists.size(), 6u);
  EXPECT_EQ(lists[1].param("continue"), "c1");
  EXPECT_TRUE(lists[5].watch);
  EXPECT_EQ(lists[5].param("resourceVersion"), "7");
  const std::vector<FakeApiServer::RecordedRequest> evictions = api_.Requests("POST", ".*/eviction");
  ASSERT_EQ(evictions.size(), 2u);
  EXPECT_EQ(evictions[0].header("authorization"), "Bearer t");
  EXPECT_EQ(evictions[0].body, "{}");
}

TEST(FakeApiServerControl, TestRoutesCreateBindAndListBoundPods) {
  FakeApiServer api({.nodes = {"n1"}, .test_control_routes = true});
  ASSERT_TRUE(api.Start().ok());
  httplib::Client client("127.0.0.1", api.port());
  httplib::Result created = client.Post("/_test/pods", Pod("p").dump(), "application/json");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 201);
  httplib::Result again = client.Post("/_test/pods", Pod("p").dump(), "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 409);
  EXPECT_EQ(client.Post("/_test/pods", Pod("q", "n1").dump(), "application/json")->status, 400);
  EXPECT_EQ(
      client.Post("/api/v1/namespaces/ml/pods/p/binding", R"({"target":{"name":"n1"}})", "application/json")->status,
      201);
  EXPECT_EQ(client.Get("/_test/bound")->body, "ml/p uid-p n1 4\n");
  EXPECT_EQ(client.Delete("/_test/pods/ml/p")->status, 200);
  EXPECT_EQ(client.Delete("/_test/pods/ml/p")->status, 404);
  EXPECT_EQ(client.Get("/_test/bound")->body, "");
  EXPECT_EQ(client.Post("/_test/objects", R"({"kind":"ComputeDomain"})", "application/json")->status, 400);
}

}  // namespace
}  // namespace rackwise::testing
