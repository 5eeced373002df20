// The extender over real HTTP on loopback, with payloads in the exact upstream format (recorded examples in
// testdata/), and hostile clients that must get a clear HTTP error without crashing anything or changing
// the ledger.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "extender_fixture.h"
#include "reservation_timer.h"

namespace rackwise::k8s::testing {
namespace {

class HttpExtenderTest : public ExtenderHttpFixture {};

TEST_F(HttpExtenderTest, RecordedPascalCaseFilter) {
  StartExtender();
  Json r = Post("/filter", ReadTestData("filter_args_pascal.json"));
  EXPECT_EQ(r["Error"], "");
  EXPECT_TRUE(r["Nodes"].is_null());
  // An 8-GPU pod: H100 nodes fit, a 4-GPU tray can never hold it, an undescribed node is unresolvable.
  EXPECT_EQ(r["NodeNames"], Json::array({"b0-r0000-n01", "b0-r0000-n02"}));
  EXPECT_TRUE(r["FailedAndUnresolvableNodes"].contains("b1-r0000-n01"));
  EXPECT_NE(r["FailedAndUnresolvableNodes"]["gpu-not-described"].get<std::string>().find("not in the cluster"),
            std::string::npos);
}

TEST_F(HttpExtenderTest, RecordedLowerCaseAndNullFieldVariants) {
  StartExtender();
  Json r = Post("/filter", ReadTestData("filter_args_lowercase.json"));
  EXPECT_EQ(r["NodeNames"], Json::array({"b1-r0001-n01", "b1-r0001-n02"}));
  // Both candidate fields null: nothing is feasible, and that is not an error.
  Json none = Post(
      "/filter",
      R"({"Pod":{"metadata":{"name":"x"},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}},"Nodes":null,"NodeNames":null})");
  EXPECT_TRUE(none["NodeNames"].is_null());
  EXPECT_EQ(none["Error"], "");
}

TEST_F(HttpExtenderTest, RecordedNodeListModeAnswersWithNodeList) {
  StartExtender();
  Json r = Post("/filter", ReadTestData("filter_args_nodelist.json"));
  ASSERT_TRUE(r["Nodes"].is_object()) << r.dump();
  ASSERT_EQ(r["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(r["Nodes"]["items"][0]["metadata"]["name"], "b0-r0001-n03");
  EXPECT_EQ(r["Nodes"]["items"][0]["status"]["allocatable"]["nvidia.com/gpu"], "8");  // echoed untouched
  EXPECT_TRUE(r["NodeNames"].is_null());
  EXPECT_TRUE(r["FailedAndUnresolvableNodes"].contains("unknown-node"));
}

TEST_F(HttpExtenderTest, PrioritizeScoresWithinRange) {
  StartExtender();
  auto res = client_->Post("/prioritize", FilterBody(MakePod("p", 4), AllNodes()), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  Json list = Json::parse(res->body);
  ASSERT_TRUE(list.is_array());
  ASSERT_EQ(list.size(), AllNodes().size());
  for (const Json& hp : list) {
    ASSERT_TRUE(hp.contains("Host") && hp.contains("Score"));
    EXPECT_GE(hp["Score"].get<int>(), 0);
    EXPECT_LE(hp["Score"].get<int>(), 10);
  }
}

TEST_F(HttpExtenderTest, BindBooksTheLedgerAndPowerCapsHold) {
  StartExtender();
  Json pod = Json::parse(ReadTestData("filter_args_pascal.json"))["Pod"];
  Json f = Post("/filter", ReadTestData("filter_args_pascal.json"));
  ASSERT_EQ(f["NodeNames"].size(), 2u);
  Json b = Post("/bind", ReadTestData("bind_args.json"));
  EXPECT_EQ(b["Error"], "");
  EXPECT_EQ(service_->NodeOfPod("ml/train-7f9c"), "b0-r0000-n01");
  EXPECT_EQ(Post("/bind", ReadTestData("bind_args.json"))["Error"], "");  // a retried bind is harmless
  // Rack b0-r0000 has a 30 kW cap: 10 kW idle + 8 GPUs (7.7 kW) booked; a second 8-GPU pod fits (15.4 kW),
  // a third does not.
  EXPECT_EQ(Schedule(MakePod("second", 8), {"b0-r0000-n02", "b0-r0000-n03"}).empty(), false);
  Json third = Post("/filter", FilterBody(MakePod("third", 8), {"b0-r0000-n03", "b0-r0000-n04"}));
  EXPECT_TRUE(third["NodeNames"].empty()) << third.dump();
  EXPECT_NE(third["FailedNodes"]["b0-r0000-n03"].get<std::string>().find("power"), std::string::npos) << third.dump();
  service_->WithLedger([](const Ledger& l) {
    for (RackId r = 0; r < static_cast<RackId>(l.topology().racks().size()); ++r) {
      EXPECT_LE(l.rack_draw(r), l.rack_cap(r));
    }
    return 0;
  });
}

TEST_F(HttpExtenderTest, BindOfAnUnseenPodOrUnknownNodeIsAClearError) {
  StartExtender();
  Json b = Post("/bind", R"({"PodName":"ghost","PodNamespace":"ml","PodUID":"x","Node":"b0-r0000-n01"})");
  EXPECT_NE(b["Error"].get<std::string>().find("not seen by filter"), std::string::npos);
  Json u = Post("/bind", R"({"PodName":"ghost","PodNamespace":"ml","PodUID":"x","Node":"nowhere"})");
  EXPECT_NE(u["Error"].get<std::string>().find("not in the cluster description"), std::string::npos);
  EXPECT_EQ(service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 0u);
}

TEST_F(HttpExtenderTest, GroupIsReservedWholeAndLaterPodsFollowIt) {
  StartExtender();
  Json ann = {{"rackwise.io/group", "llm"}, {"rackwise.io/group-size", "6"}};
  std::vector<std::string> nodes = AllNodes();
  std::set<std::string> racks;
  for (int i = 0; i < 6; ++i) {
    std::string node = Schedule(MakePod("llm-" + std::to_string(i), 4, ann), nodes);
    ASSERT_FALSE(node.empty()) << "pod " << i;
    racks.insert(node.substr(0, node.rfind('-')));
  }
  EXPECT_EQ(racks.size(), 1u);  // 24 GPUs: one NVL72 domain
  EXPECT_GE(metrics_.decisions(Verb::kFilter, "group_reserved"), 1u);
  // A seventh pod beyond the declared size gets a slot planned for it.
  EXPECT_FALSE(Schedule(MakePod("llm-6", 4, ann), nodes).empty());
}

// policy.preferred_wait_s: a `preferred` group that cannot have its fewest NVLink domains now is refused (and
// retried by kube-scheduler) until it has waited that long since its first try; then it may spread.
TEST_F(HttpExtenderTest, PreferredGroupWaitsForOneDomainThenSpreads) {
  v1::ClusterDescription description = MixedCluster();
  description.mutable_policy()->set_preferred_wait_s(600);
  StartExtender(true, nullptr, {}, {}, description);
  // 12 GPUs busy in each NVL72 rack: 60 free in each, so 64 GPUs fit only across both.
  for (const char* rack : {"b1-r0000", "b1-r0001"}) {
    for (int k = 0; k < 3; ++k) {
      std::string node = absl::StrCat(rack, "-n", k < 9 ? "0" : "", k + 1);
      ASSERT_FALSE(Schedule(MakePod(absl::StrCat("busy-", node), 4), {node}).empty()) << node;
    }
  }
  Json ann = {{"rackwise.io/group", "big"}, {"rackwise.io/group-size", "16"}, {"rackwise.io/nvlink", "preferred"}};
  std::vector<std::string> nvl;
  for (const std::string& n : AllNodes()) {
    if (n.rfind("b1-", 0) == 0) nvl.push_back(n);
  }
  auto try_first = [&](const char* pod) {
    Json f = Post("/filter", FilterBody(MakePod(pod, 4, ann), nvl));
    return f["NodeNames"].is_array() ? f["NodeNames"].size() : 0u;
  };
  EXPECT_EQ(try_first("big-0"), 0u);
  Json f = Post("/filter", FilterBody(MakePod("big-1", 4, ann), nvl));
  ASSERT_TRUE(f["FailedNodes"].is_object()) << f.dump();  // retryable, not unresolvable
  EXPECT_NE(f["FailedNodes"].begin()->get<std::string>().find("big"), std::string::npos);
  now_ms_ += 599'000;
  EXPECT_EQ(try_first("big-0"), 0u);
  now_ms_ += 2'000;  // 601 s after the group's first try
  EXPECT_GT(try_first("big-0"), 0u);
  EXPECT_EQ(service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 6u + 16u);
}

TEST_F(HttpExtenderTest, ExpiredReservationIsReleased) {
  ExtenderOptions opt;
  opt.reservation_ttl_ms = 1000;
  StartExtender(true, nullptr, {}, opt);
  Json ann = {{"rackwise.io/group", "abandoned"}, {"rackwise.io/group-size", "10"}};
  Json f = Post("/filter", FilterBody(MakePod("a-0", 4, ann), AllNodes()));
  ASSERT_FALSE(f["NodeNames"].empty());
  EXPECT_EQ(service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 10u);
  now_ms_ += 1001;
  Post("/filter", FilterBody(MakePod("other", 1), AllNodes()));  // any call expires old reservations
  EXPECT_EQ(service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 0u);
}

// With no other traffic at all, the timer releases an abandoned group's slots within a second of its TTL.
TEST_F(HttpExtenderTest, ReservationExpiresOnItsOwnWithinASecondOfItsTtl) {
  ExtenderOptions opt;
  opt.reservation_ttl_ms = 1000;
  real_clock_ = true;
  StartExtender(true, nullptr, {}, opt);
  ReservationTimer timer(service_.get(), SteadyNowMs);
  timer.Start();
  auto allocations = [&] { return service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }); };
  Json ann = {{"rackwise.io/group", "abandoned"}, {"rackwise.io/group-size", "10"}};
  const auto before = std::chrono::steady_clock::now();
  ASSERT_FALSE(Post("/filter", FilterBody(MakePod("a-0", 4, ann), AllNodes()))["NodeNames"].empty());
  const auto after = std::chrono::steady_clock::now();
  EXPECT_EQ(allocations(), 10u);
  while (allocations() != 0 && std::chrono::steady_clock::now() - after < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto released = std::chrono::steady_clock::now();
  EXPECT_EQ(allocations(), 0u);
  EXPECT_GE(released - before, std::chrono::milliseconds(1000));  // not before its TTL
  EXPECT_LE(released - after, std::chrono::milliseconds(2000));   // and within a second of it
}

// The seen-by-filter book is bounded, but full it drops its oldest entries, not everything: a pod filtered
// after a flood of one-off pods still binds.
TEST_F(HttpExtenderTest, PodBookEvictsByAgeSoALegitimatePodStillBinds) {
  ExtenderOptions opt;
  opt.max_pending_pods = 1000;
  StartExtender(true, nullptr, {}, opt);
  auto filter = [&](const std::string& name) {
    now_ms_ += 1;
    Json f = Post("/filter", FilterBody(MakePod(name, 1), {"b1-r0000-n01"}));
    ASSERT_EQ(f["NodeNames"].size(), 1u) << f.dump();
  };
  for (int i = 0; i < 999; ++i) filter(absl::StrCat("flood-", i));
  filter("legit");  // the book is full now
  for (int i = 999; i < 1400; ++i) filter(absl::StrCat("flood-", i));
  Json b =
      Post("/bind",
           Json({{"PodName", "legit"}, {"PodNamespace", "ml"}, {"PodUID", "uid-ml-legit"}, {"Node", "b1-r0000-n01"}})
               .dump());
  EXPECT_EQ(b["Error"], "");
  EXPECT_EQ(service_->NodeOfPod("ml/legit"), "b1-r0000-n01");
  // The oldest went: the first flood pod cannot bind any more.
  Json old = Post(
      "/bind",
      Json({{"PodName", "flood-0"}, {"PodNamespace", "ml"}, {"PodUID", "uid-ml-flood-0"}, {"Node", "b1-r0000-n01"}})
          .dump());
  EXPECT_NE(old["Error"].get<std::string>().find("not seen by filter"), std::string::npos) << old.dump();
}

TEST_F(HttpExtenderTest, PreemptKeepsOnlyNodesWhereEvictionHelps) {
  StartExtender();
  ASSERT_EQ(Schedule(MakePod("victim-a", 8), {"b0-r0000-n01"}), "b0-r0000-n01");
  ASSERT_EQ(Schedule(MakePod("victim-b", 8), {"b0-r0000-n02"}), "b0-r0000-n02");
  // n01 is full; evicting victim-a frees it. n02 is full and the scheduler proposes no victim there.
  Json r = Post("/preempt", ReadTestData("preempt_args_meta.json"));
  ASSERT_TRUE(r["NodeNameToMetaVictims"].is_object()) << r.dump();
  EXPECT_TRUE(r["NodeNameToMetaVictims"].contains("b0-r0000-n01"));
  EXPECT_FALSE(r["NodeNameToMetaVictims"].contains("b0-r0000-n02"));
  EXPECT_EQ(r["NodeNameToMetaVictims"]["b0-r0000-n01"]["Pods"][0]["UID"], "uid-ml-victim-a");
  EXPECT_EQ(service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 2u);  // untouched
}

TEST_F(HttpExtenderTest, NotSyncedFilterFailsAndReadyzSaysWhy) {
  StartExtender(/*synced=*/false);
  Json r = Post("/filter", ReadTestData("filter_args_pascal.json"));
  EXPECT_NE(r["Error"].get<std::string>().find("rebuilding"), std::string::npos);
  auto ready = client_->Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  service_->SetSynced(true);
  ready = client_->Get("/readyz");
  EXPECT_EQ(ready->status, 200);
  EXPECT_NE(ready->body.find("standalone"), std::string::npos);
}

TEST_F(HttpExtenderTest, HealthAndMetrics) {
  StartExtender();
  Post("/filter", ReadTestData("filter_args_pascal.json"));
  Post("/bind", ReadTestData("bind_args.json"));
  auto h = client_->Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = client_->Get("/metrics");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  for (const char* needle :
       {"rackwise_decisions_total{verb=\"filter\",outcome=\"feasible\"} 1",
        "rackwise_decisions_total{verb=\"bind\",outcome=\"bound\"} 1",
        "rackwise_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 1",
        "rackwise_request_duration_seconds_count{verb=\"bind\"} 1", "rackwise_rack_draw_watts{rack=\"b0-r0000\"} 17700",
        "rackwise_rack_cap_watts{rack=\"b0-r0000\"} 30000", "rackwise_domain_free_gpus{domain=\"b0-r0000-n01\"",
        "rackwise_gang_reservations 0", "rackwise_candidate_list_cache_total{result=\"miss\"} 1",
        "# TYPE rackwise_request_duration_seconds histogram"}) {
    EXPECT_NE(m->body.find(needle), std::string::npos) << needle;
  }
}

// on_overdraw: requeue_newest. Rack b0-r0000 (cap 30 kW) measures 34 kW: the newest pod there (its 7.7 kW
// cover the 4 kW excess) is evicted, once; the older pod and the pod on another rack stay.
TEST_F(HttpExtenderTest, RequeueNewestEvictsTheNewestPodOfAnOverdrawnRackOnce) {
  RecordingBinder binder;
  StartExtender(true, &binder);
  now_ms_ = 1'000'000;
  ASSERT_EQ(Schedule(MakePod("old", 8), {"b0-r0000-n01"}), "b0-r0000-n01");
  now_ms_ = 2'000'000;
  ASSERT_EQ(Schedule(MakePod("new", 8), {"b0-r0000-n02"}), "b0-r0000-n02");
  ASSERT_EQ(Schedule(MakePod("elsewhere", 8), {"b0-r0001-n01"}), "b0-r0001-n01");
  TelemetrySettings settings;
  settings.enabled = true;
  settings.on_overdraw = OverdrawAction::kRequeueNewest;
  PowerReadings readings;
  readings.nodes_ok = true;
  for (const Node& n : service_->topology().nodes()) {
    const bool hot = service_->topology().racks()[n.rack].name == "b0-r0000";
    readings.nodes.push_back({n.name, hot ? 6000.0 : 100.0, 1.0});  // GPU watts; + 2.5 kW idle per node
  }
  std::vector<std::string> log = service_->ApplyPowerReadings(settings, readings);
  {
    std::lock_guard<std::mutex> lock(binder.mu);
    EXPECT_EQ(binder.evicted, std::vector<std::string>{"ml/new"});
  }
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& line) {
    return absl::StartsWith(line, "OVERDRAW: requeue_newest: evicted pod ml/new (rack b0-r0000 measures over its cap");
  })) << absl::StrJoin(log, "\n");
  service_->ApplyPowerReadings(settings, readings);  // still over: the same overdraw acts once
  std::lock_guard<std::mutex> lock(binder.mu);
  EXPECT_EQ(binder.evicted.size(), 1u);
}

// A binder whose API server hangs until released; counts the binds waiting in it.
class StuckBinder : public PodBinder {
 public:
  absl::Status BindPod(const BindingArgs&) override {
    std::unique_lock<std::mutex> lock(mu_);
    most_ = std::max(most_, ++in_flight_);
    changed_.notify_all();
    changed_.wait(lock, [&] { return released_; });
    --in_flight_;
    return absl::OkStatus();
  }
  absl::Status EvictPod(const std::string&, const std::string&) override { return absl::OkStatus(); }
  bool WaitInFlight(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return in_flight_ >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    changed_.notify_all();
  }
  int most() {
    std::lock_guard<std::mutex> lock(mu_);
    return most_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int in_flight_ = 0, most_ = 0;
  bool released_ = false;
};

// Binds wait on the API server off the I/O threads: with one I/O thread and two binds hanging in the API
// server, /filter and /healthz still answer (answered on the I/O thread, they would wait for the API server,
// here for ever). At most --bind-threads binds are in flight; the third waits its turn and then succeeds.
TEST_F(HttpExtenderTest, BindsWaitingOnTheApiServerDoNotStallOtherRequests) {
  StuckBinder binder;
  HttpServerOptions http;
  http.threads = 1;
  http.blocking_threads = 2;
  StartExtender(true, &binder, http);
  std::vector<std::string> bind_bodies;
  for (int i = 0; i < 3; ++i) {
    const Json pod = MakePod(absl::StrCat("p", i), 1);
    const std::string node = absl::StrCat("b0-r0000-n0", i + 1);
    ASSERT_EQ(Post("/filter", FilterBody(pod, {node}))["NodeNames"].size(), 1u);
    bind_bodies.push_back(Json({{"PodName", pod["metadata"]["name"]},
                                {"PodNamespace", "ml"},
                                {"PodUID", pod["metadata"]["uid"]},
                                {"Node", node}})
                              .dump());
  }
  std::vector<std::string> answers(3);
  std::vector<std::thread> binds;
  for (int i = 0; i < 3; ++i) {
    binds.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", server_->port());
      c.set_read_timeout(30, 0);
      auto res = c.Post("/bind", bind_bodies[i], "application/json");
      answers[i] = res ? absl::StrCat(res->status, " ", res->body) : "no answer";
    });
  }
  const bool two_waiting = binder.WaitInFlight(2);
  EXPECT_TRUE(two_waiting) << "the binds never reached the API server";
  if (two_waiting) {
    EXPECT_EQ(Post("/filter", FilterBody(MakePod("q", 1), {"b0-r0001-n01"}))["NodeNames"].size(), 1u);
    auto health = client_->Get("/healthz");
    EXPECT_TRUE(health && health->status == 200);
  }
  binder.Release();
  for (std::thread& t : binds) t.join();
  for (const std::string& answer : answers) EXPECT_EQ(answer, "200 {\"Error\":\"\"}");
  EXPECT_EQ(binder.most(), 2);
}

// --log-level debug: one line per filter and per bind decision, naming the pod, the outcome and a reason.
TEST_F(HttpExtenderTest, DebugLogHasOneLinePerFilterAndBindDecision) {
  std::mutex mu;
  std::vector<std::string> lines;
  HttpServerOptions http;
  http.decision_log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(line);
  };
  StartExtender(true, nullptr, http);
  Post("/filter", ReadTestData("filter_args_pascal.json"));
  Post("/bind", ReadTestData("bind_args.json"));
  Post("/bind", ReadTestData("bind_args.json"));  // a second bind of the same pod to the same node: no-op, bound
  Post("/prioritize", ReadTestData("filter_args_pascal.json"));  // not a decision: no line
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(absl::StartsWith(lines[0], "filter ml/train-7f9c: ")) << lines[0];
  EXPECT_NE(lines[0].find(" of 4 nodes feasible, "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("; first reason: "), std::string::npos) << lines[0];  // gpu-not-described fails
  EXPECT_EQ(lines[1], "bind ml/train-7f9c -> b0-r0000-n01: bound");
  EXPECT_EQ(lines[2], "bind ml/train-7f9c -> b0-r0000-n01: bound");
}

// Power domains get the same gauges as racks: draw, counted, cap and the room left under the cap less the reserve.
TEST_F(HttpExtenderTest, MetricsShowEveryPowerDomain) {
  SyntheticClusterSpec spec;
  spec.name = "rows";
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 30.0, 8, /*racks_per_row=*/2, /*row_cap_kw=*/50.0});
  spec.hall_cap_kw = 80;
  v1::ClusterDescription description = BuildSyntheticCluster(spec);
  description.mutable_policy()->set_power_reserve_pct(10);
  StartExtender(true, nullptr, {}, {}, description);
  auto m = client_->Get("/metrics");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  // Idle: 2 racks x 4 nodes x 2.5 kW = 20 kW under the row (cap 50 kW; room 45 - 20) and the hall (80 kW; 72 - 20).
  for (const char* needle : {"# TYPE rackwise_power_domain_draw_watts gauge",
                             "rackwise_power_domain_draw_watts{power_domain=\"b0-row00\"} 20000",
                             "rackwise_power_domain_cap_watts{power_domain=\"b0-row00\"} 50000",
                             "rackwise_power_domain_room_watts{power_domain=\"b0-row00\"} 25000",
                             "rackwise_power_domain_counted_watts{power_domain=\"b0-row00\"} 20000",
                             "rackwise_power_domain_cap_watts{power_domain=\"hall\"} 80000",
                             "rackwise_power_domain_room_watts{power_domain=\"hall\"} 52000"}) {
    EXPECT_NE(m->body.find(needle), std::string::npos) << needle << "\n" << m->body;
  }
}

TEST_F(HttpExtenderTest, MalformedRequestsGetClearErrors) {
  HttpServerOptions http;
  http.max_body_bytes = 1 << 20;
  StartExtender(true, nullptr, http);
  Json bad = Post("/filter", "{\"Pod\": {", 400);
  EXPECT_NE(bad["Error"].get<std::string>().find("invalid JSON"), std::string::npos);
  EXPECT_NE(Post("/prioritize", "[1,2]", 400)["Error"].get<std::string>().find("object"), std::string::npos);
  EXPECT_NE(Post("/bind", "{}", 400)["Error"].get<std::string>().find("PodName"), std::string::npos);
  Post("/preempt", R"({"NodeNameToMetaVictims":{"n":{"Pods":[{}]}}})", 400);
  Post("/filter", std::string(100000, '['), 400);  // nesting bomb
  Post(
      "/filter",
      R"({"Pod":{"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"1.5"}}}]}},"NodeNames":["b0-r0000-n01"]})");
  auto huge = client_->Post("/filter", std::string(2 << 20, ' '), "application/json");
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 413);
  auto get = client_->Get("/filter");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  auto missing = client_->Post("/nope", "{}", "application/json");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(service_->WithLedger([](const Ledger& l) { return l.allocation_count(); }), 0u);
  // Still serving.
  EXPECT_EQ(Post("/filter", ReadTestData("filter_args_lowercase.json"))["NodeNames"].size(), 2u);
}

TEST_F(HttpExtenderTest, KeepAliveServesManyRequestsOnOneConnection) {
  StartExtender();
  for (int i = 0; i < 50; ++i) {
    Json r = Post("/filter", ReadTestData("filter_args_lowercase.json"));
    ASSERT_EQ(r["NodeNames"].size(), 2u);
  }
}

// HTTPS (server certificate and client certificates) is tested in tls_credentials_test.cc; slow, idle and
// pipelining clients in http_hostile_clients_test.cc.

}  // namespace
}  // namespace rackwise::k8s::testing
