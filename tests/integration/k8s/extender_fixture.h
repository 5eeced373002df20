// Shared setup for the extender's integration tests: a small mixed cluster (HGX H100 racks whose power cap
// binds, and GB200 NVL72 racks), an ExtenderService behind a real HTTP server on a free loopback port, a
// keep-alive client, a controllable clock, and pod builders in the exact shape kube-scheduler sends.
#pragma once

#include <atomic>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "extender_service.h"
#include "http_server.h"
#include "rackwise/synthetic_cluster.h"

namespace rackwise::k8s::testing {

// b0: 2 H100 racks x 4 nodes, cap 30 kW (idle 10 kW, full 40.8 kW: the cap binds at ~20 GPUs per rack).
// b1: 2 GB200 NVL72 racks x 18 trays (NVLink domain = rack, 72 GPUs), caps that do not bind.
inline v1::ClusterDescription MixedCluster() {
  SyntheticClusterSpec spec;
  spec.name = "k8s-test";
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 30.0});
  spec.blocks.push_back({ReferenceSystem::kGb200Nvl72, 2, 18});
  return BuildSyntheticCluster(spec);
}

inline std::string ReadTestData(const std::string& name) {
  std::ifstream in(std::string(RACKWISE_K8S_TESTDATA) + "/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A pod as kube-scheduler serialises it (core/v1 Pod, lowerCamel keys, status.phase Pending).
inline Json MakePod(const std::string& name, int gpus, const Json& annotations = Json::object(),
                    const Json& labels = Json::object(), const std::string& ns = "ml") {
  Json pod = {
      {"metadata",
       {{"name", name},
        {"namespace", ns},
        {"uid", "uid-" + ns + "-" + name},
        {"resourceVersion", "1"},
        {"creationTimestamp", "2026-11-29T19:00:00Z"},
        {"labels", labels},
        {"annotations", annotations}}},
      {"spec",
       {{"schedulerName", "default-scheduler"},
        {"containers", Json::array({{{"name", "main"},
                                     {"image", "nvcr.io/nvidia/pytorch:24.01-py3"},
                                     {"resources",
                                      {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}},
                                       {"requests", {{"cpu", "8"}, {"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}},
      {"status", {{"phase", "Pending"}}}};
  return pod;
}

inline std::string FilterBody(const Json& pod, const std::vector<std::string>& names) {
  Json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
  return args.dump();
}

// POSTs and parses the JSON answer; fails the test on a non-200 unless expected.
inline Json PostJson(httplib::Client& client, const std::string& path, const std::string& body,
                     int expect_status = 200) {
  auto res = client.Post(path, body, "application/json");
  EXPECT_TRUE(res) << "no answer from " << path;
  if (!res) return Json();
  EXPECT_EQ(res->status, expect_status) << res->body;
  Json j = Json::parse(res->body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << res->body;
  return j;
}

// kube-scheduler's cycle for one pod: filter, prioritize the feasible nodes, pick the best, bind.
// Returns the chosen node or "" (unschedulable now). `bind_error`, when given, gets the bind's Error.
inline std::string ScheduleOver(httplib::Client& client, const Json& pod, const std::vector<std::string>& candidates,
                                std::string* bind_error = nullptr) {
  Json f = PostJson(client, "/filter", FilterBody(pod, candidates));
  if (!f["Error"].get<std::string>().empty() || f["NodeNames"].is_null() || f["NodeNames"].empty()) return "";
  std::vector<std::string> feasible = f["NodeNames"].get<std::vector<std::string>>();
  std::string best = feasible[0];
  if (feasible.size() > 1) {
    Json p = PostJson(client, "/prioritize", FilterBody(pod, feasible));
    int64_t top = -1;
    for (const Json& hp : p) {
      if (hp["Score"].get<int64_t>() > top) {
        top = hp["Score"].get<int64_t>();
        best = hp["Host"].get<std::string>();
      }
    }
  }
  Json b = PostJson(client, "/bind",
                    Json({{"PodName", pod["metadata"]["name"]},
                          {"PodNamespace", pod["metadata"]["namespace"]},
                          {"PodUID", pod["metadata"]["uid"]},
                          {"Node", best}})
                        .dump());
  if (bind_error != nullptr) *bind_error = b["Error"].get<std::string>();
  if (!b["Error"].get<std::string>().empty()) return "";
  return best;
}

// A binder that accepts every binding and records evictions (what the API server would be asked). Evictions of
// the pods in `refuse` answer 429, as a PodDisruptionBudget that forbids them.
class RecordingBinder : public PodBinder {
 public:
  absl::Status BindPod(const BindingArgs&) override { return absl::OkStatus(); }
  absl::Status EvictPod(const std::string& ns, const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu);
    if (refuse.count(ns + "/" + name)) {
      return absl::ResourceExhaustedError("Cannot evict pod as it would violate the pod's disruption budget.");
    }
    evicted.push_back(ns + "/" + name);
    return absl::OkStatus();
  }
  std::mutex mu;
  std::vector<std::string> evicted;
  std::set<std::string> refuse;  // "namespace/name"
};

class ExtenderHttpFixture : public ::testing::Test {
 protected:
  void StartExtender(bool synced = true, PodBinder* binder = nullptr, HttpServerOptions http = {},
                     ExtenderOptions options = {}, const v1::ClusterDescription& description = MixedCluster()) {
    auto topology = Topology::Build(description);
    ASSERT_TRUE(topology.ok()) << topology.status();
    service_ =
        std::make_unique<ExtenderService>(std::make_unique<Topology>(std::move(*topology)), options, binder, &metrics_);
    service_->SetSynced(synced);
    if (!real_clock_) http.now_ms = [this] { return now_ms_.load(); };
    server_ = std::make_unique<ExtenderHttpServer>(service_.get(), http);
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_keep_alive(true);
    client_->set_tcp_nodelay(true);  // as Go's net/http (kube-scheduler) does
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override {
    client_.reset();  // close the keep-alive connection first: the server's workers wait on idle ones
    if (server_) server_->Stop();
    if (service_) {
      EXPECT_TRUE(service_->CheckInvariants().ok()) << service_->CheckInvariants();
    }
  }

  std::vector<std::string> AllNodes() const {
    std::vector<std::string> names;
    for (const Node& n : service_->topology().nodes()) names.push_back(n.name);
    return names;
  }

  Json Post(const std::string& path, const std::string& body, int expect_status = 200) {
    return PostJson(*client_, path, body, expect_status);
  }
  std::string Schedule(const Json& pod, const std::vector<std::string>& candidates) {
    return ScheduleOver(*client_, pod, candidates);
  }

  ExtenderMetrics metrics_;
  std::unique_ptr<ExtenderService> service_;
  std::unique_ptr<ExtenderHttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
  std::atomic<int64_t> now_ms_{1'000'000};
  bool real_clock_ = false;  // set before StartExtender: the server uses SteadyNowMs instead of now_ms_
};

}  // namespace rackwise::k8s::testing
