// Power steering delivered to the GPUs on Kubernetes, with the real processes over real sockets:
//  - rackwise_test_fake_apiserver (pods and nodes; the test binds the pods, as kube-scheduler would);
//  - rackwise-extender, steering every telemetry round (on_overdraw: lower_limits) from a stand-in Prometheus
//    served by the test (instant queries over HTTP, one answer per node), its cap changed over gRPC;
//  - rackwise-node-agent on gpu001, following GET /limits, with a stand-in kubelet (PodResources over gRPC on a
//    unix socket) and the fake libnvidia-ml.so.1, whose state file holds each board's limit.
// Checked: a cap lowered by 30% brings every pod's GPU limits down to the extender's targets, below what the pods
// declared (the extender publishes them within two telemetry rounds, the agent applies them within three of its
// own), no pod is evicted, and the declared limits come back when the cap returns; a measured overdraw does the
// same. Every wait is on a state, and each hop is counted in the rounds that drive it (the Prometheus queries the
// extender made, the agent's rounds_total), so a slow machine stretches rounds but not the count.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fake_kubelet.h"
#include "fake_nvml_state.h"
#include "json_fields.h"
#include "limits_document.h"
#include "loopback_server.h"
#include "rackwise/testing/child_process.h"
#include "rackwise/v1/placement_service.grpc.pb.h"

namespace rackwise::node_agent {
namespace {

using k8s::Json;
using rackwise::testing::Eventually;

// A child process with stdout and stderr into one log; its port is read from the first log line matching.
class Child {
 public:
  ~Child() { Stop(); }
  // Starts `argv` with `env` added; waits for `marker` followed by a port in the log. "" or why not.
  std::string Start(std::vector<std::string> argv, const std::vector<std::string>& env, const std::string& log,
                    const std::string& marker) {
    log_ = log;
    std::vector<std::string> environment = env;
    for (char** e = environ; *e != nullptr; ++e) environment.emplace_back(*e);
    std::vector<char*> args, envp;
    for (std::string& a : argv) args.push_back(a.data());
    for (std::string& e : environment) envp.push_back(e.data());
    args.push_back(nullptr);
    envp.push_back(nullptr);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return "cannot open " + log;
    pid_ = ::fork();  // after fork only async-signal-safe calls until exec
    if (pid_ == 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
    ::close(fd);
    const bool started = static_cast<bool>(Eventually([&] {
      const std::string text = ReadAll(log_);
      const size_t at = text.find(marker);
      if (at == std::string::npos) return false;
      const size_t digits = at + marker.size();
      return absl::SimpleAtoi(text.substr(digits, text.find_first_not_of("0123456789", digits) - digits), &port_);
    }));
    return started && Alive() ? "" : argv[0] + " did not start:\n" + ReadAll(log_);
  }
  bool Alive() {
    int status = 0;
    return pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == 0;
  }
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  int port() const { return port_; }
  std::string Log() const { return ReadAll(log_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
};

// Prometheus's instant-query API, answering every query with one sample per node: the GPU watts set last, dated
// now. Counts the queries: each is one telemetry round of the extender.
class FakePrometheus {
 public:
  FakePrometheus() {
    http_.server().Get("/api/v1/query", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      ++queries_;
      Json result = Json::array();
      for (const auto& [node, watts] : gpu_watts_) {
        result.push_back({{"metric", {{"Hostname", node}}},
                          {"value", {static_cast<double>(std::time(nullptr)), absl::StrCat(watts)}}});
      }
      Json body = {{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}};
      res.set_content(body.dump(), "application/json");
    });
    http_.Start();
  }
  void Set(const std::string& node, double watts) {
    std::lock_guard<std::mutex> lock(mu_);
    gpu_watts_[node] = watts;
  }
  int queries() {
    std::lock_guard<std::mutex> lock(mu_);
    return queries_;
  }
  int port() const { return http_.port(); }

 private:
  LoopbackServer http_;
  std::mutex mu_;
  std::map<std::string, double> gpu_watts_;
  int queries_ = 0;
};

// One H100 rack of two nodes (idle 5 kW), every node measured each second; steering floors at 312.5 W per GPU
// (the idle share). Its cap is set over gRPC by the test.
std::string Description(int prometheus_port) {
  return absl::StrCat(R"(cluster: steering
node_types:
  - name: hgx-h100
    gpus: 8
    nvlink: node
    gpu_watts: 700
    node_watts: 10200
    idle_watts: 2500
racks:
  - name: r01
    type: hgx-h100
    nodes: gpu[001-002]
    power_cap_kw: 100
policy:
  power_reserve_pct: 0
telemetry:
  prometheus_url: http://127.0.0.1:)",
                      prometheus_port, R"(
  node_power_query: sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE)
  interval_s: 1
  stale_after_s: 5
  on_overdraw: lower_limits
)");
}

// The pods: a declares 600 W on 4 GPUs, b 500 W on 4 GPUs, both on gpu001 (the estimate is 5 + 2.4 + 2 = 9.4 kW).
const std::map<std::string, std::pair<int64_t, std::vector<int>>> kPods = {{"a", {600'000, {0, 1, 2, 3}}},
                                                                           {"b", {500'000, {4, 5, 6, 7}}}};

class SteeringProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "rackwise_steering_it.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    prometheus_.Set("gpu001", 3000);
    prometheus_.Set("gpu002", 0);
    std::ofstream(dir_ + "/rackwise.yaml") << Description(prometheus_.port());
    std::ofstream(dir_ + "/admin-token") << "9f3c0a7d51e24b6c8a1f0e2d3c4b5a69\n";
    ASSERT_EQ(api_.Start({RACKWISE_FAKE_APISERVER_BIN, "--nodes", "gpu001,gpu002"}, {}, dir_ + "/apiserver.log",
                         "listening on 127.0.0.1:"),
              "");
    std::ofstream(dir_ + "/kubeconfig") << "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
                                        << "    server: http://127.0.0.1:" << api_.port() << "\ncontexts:\n"
                                        << "- name: fake\n  context: {cluster: fake, user: test}\n"
                                        << "current-context: fake\nusers:\n- name: test\n  user: {}\n";
    CreateBoundPods();
    ASSERT_EQ(extender_.Start({RACKWISE_EXTENDER_BIN, "--cluster", dir_ + "/rackwise.yaml", "--kubeconfig",
                               dir_ + "/kubeconfig", "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0",
                               "--admin-token-file", dir_ + "/admin-token"},
                              {}, dir_ + "/extender.log", "extender verbs on http://127.0.0.1:"),
              "");
    ASSERT_TRUE(Eventually([&] { return absl::StrContains(extender_.Log(), "gRPC rackwise.v1.Placement on port "); }));
    const std::string log = extender_.Log();
    const size_t at = log.find("gRPC rackwise.v1.Placement on port ") + 35;
    ASSERT_TRUE(absl::SimpleAtoi(log.substr(at, log.find_first_not_of("0123456789", at) - at), &grpc_port_)) << log;
    stub_ = v1::Placement::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_port_), grpc::InsecureChannelCredentials()));
    ASSERT_TRUE(Eventually([&] { return Targets().size() == 2; })) << extender_.Log();

    nvml_state_ = dir_ + "/fake_nvml.state";
    std::ofstream nvml(nvml_state_);
    for (int g = 0; g < 8; ++g) nvml << "gpu GPU-aaaa-" << g << " 200000 700000 700000 700000 90000\n";
    nvml.close();
    kubelet_ = std::make_unique<FakeKubelet>(dir_ + "/kubelet.sock");
    ASSERT_TRUE(kubelet_->ok());
    std::map<std::string, std::vector<std::string>> devices;
    for (const auto& [name, pod] : kPods)
      for (int g : pod.second) devices["ml/" + name].push_back(absl::StrCat("GPU-aaaa-", g));
    kubelet_->SetPods(devices);
    ASSERT_EQ(
        agent_.Start({RACKWISE_NODE_AGENT_BIN, "--node-name", "gpu001", "--kubeconfig", dir_ + "/kubeconfig",
                      "--pod-resources", "unix://" + dir_ + "/kubelet.sock", "--nvml-library", RACKWISE_FAKE_NVML_LIB,
                      "--state-file", dir_ + "/state/leases", "--interval", "0.2", "--listen", "127.0.0.1:0",
                      "--limits-url", absl::StrCat("http://127.0.0.1:", extender_.port())},
                     {"RACKWISE_FAKE_NVML_STATE=" + nvml_state_}, dir_ + "/agent.log", "on http://127.0.0.1:"),
        "");
    // The declared limits first: every board at its pod's annotation.
    ASSERT_TRUE(Eventually([&] { return LimitsAre(Declared()); })) << Diagnose();
  }
  void TearDown() override {
    agent_.Stop();
    extender_.Stop();
    api_.Stop();
    kubelet_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  void CreateBoundPods() {
    httplib::Client api("127.0.0.1", api_.port());
    for (const auto& [name, pod] : kPods) {
      Json body = {{"metadata",
                    {{"name", name},
                     {"namespace", "ml"},
                     {"uid", "u-" + name},
                     {"annotations", {{"rackwise.io/gpu-watts", absl::StrCat(pod.first / 1000)}}}}},
                   {"spec",
                    {{"schedulerName", "rackwise"},
                     {"containers", {{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}}}}}}}},
                   {"status", {{"phase", "Running"}}}};
      auto created = api.Post("/_test/pods", body.dump(), "application/json");
      ASSERT_TRUE(created && created->status == 201) << (created ? created->body : "no answer");
      Json binding = {{"apiVersion", "v1"},
                      {"kind", "Binding"},
                      {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "u-" + name}}},
                      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "gpu001"}}}};
      auto bound =
          api.Post(absl::StrCat("/api/v1/namespaces/ml/pods/", name, "/binding"), binding.dump(), "application/json");
      ASSERT_TRUE(bound && bound->status < 300) << (bound ? bound->body : "no answer");
    }
  }

  // The extender's targets for gpu001, by pod name (mW per GPU, declared mW per GPU).
  std::map<std::string, std::pair<int64_t, int64_t>> Targets() {
    httplib::Client cli("127.0.0.1", extender_.port());
    auto res = cli.Get("/limits?node=gpu001");
    if (!res || res->status != 200) return {};
    absl::StatusOr<k8s::LimitsDocument> doc = k8s::ParseLimitsDocument(res->body);
    EXPECT_TRUE(doc.ok()) << doc.status();
    std::map<std::string, std::pair<int64_t, int64_t>> out;
    for (const k8s::SteeredLimit& e : doc.ok() ? doc->allocations : std::vector<k8s::SteeredLimit>{})
      for (const k8s::SteeredPod& p : e.pods) out[p.name] = {e.milliwatts_per_gpu, e.declared_milliwatts_per_gpu};
    return out;
  }
  // The limit in force on each board, from the fake NVML's state file.
  std::vector<int64_t> Limits() { return FakeNvmlLimits(nvml_state_); }
  std::vector<int64_t> PerBoard(const std::map<std::string, int64_t>& per_pod) {
    std::vector<int64_t> out(8, 0);
    for (const auto& [name, pod] : kPods)
      for (int g : pod.second) out[g] = per_pod.at(name);
    return out;
  }
  std::vector<int64_t> Declared() { return PerBoard({{"a", 600'000}, {"b", 500'000}}); }
  bool LimitsAre(const std::vector<int64_t>& want) { return Limits() == want; }
  // The extender's targets when every one is below what its pod declared (and at or above the floor), else {}.
  std::map<std::string, int64_t> HeldTargets() {
    std::map<std::string, int64_t> target;
    for (const auto& [name, limit] : Targets()) {
      if (limit.first >= limit.second || limit.first < 312'500) return {};
      target[name] = limit.first;
    }
    return target.size() == 2 ? target : std::map<std::string, int64_t>{};
  }
  bool TargetsDeclared() {
    std::map<std::string, std::pair<int64_t, int64_t>> t = Targets();
    return t.size() == 2 && t["a"].first == 600'000 && t["b"].first == 500'000;
  }
  // Every pod's boards at the extender's target, and every target below what the pod declared.
  bool SteeredDown() {
    std::map<std::string, int64_t> target = HeldTargets();
    return !target.empty() && LimitsAre(PerBoard(target));
  }
  int64_t AgentRounds() {
    httplib::Client cli("127.0.0.1", agent_.port());
    auto m = cli.Get("/metrics");
    const std::string name = "\nrackwise_node_agent_rounds_total ";
    int64_t n = -1;
    if (m && m->body.find(name) != std::string::npos) {
      const size_t at = m->body.find(name) + name.size();
      absl::SimpleAtoi(m->body.substr(at, m->body.find('\n', at) - at), &n);
    }
    return n;
  }
  void SetCap(double kw) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer 9f3c0a7d51e24b6c8a1f0e2d3c4b5a69");
    v1::SetPowerCapRequest req;
    req.set_name("r01");
    req.set_power_cap_kw(kw);
    v1::SetPowerCapResponse resp;
    grpc::Status s = stub_->SetPowerCap(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  // The pods the API server still has bound ("NS/NAME UID NODE GPUS" lines): none evicted.
  std::string Bound() {
    httplib::Client api("127.0.0.1", api_.port());
    auto res = api.Get("/_test/bound");
    return res ? res->body : "";
  }
  std::string Diagnose() {
    std::string limits;
    for (int64_t l : Limits()) absl::StrAppend(&limits, l, " ");
    return absl::StrCat("NVML limits: ", limits, "\n--- extender:\n", extender_.Log(), "\n--- agent:\n", agent_.Log());
  }
  // Runs `change`, waits until the extender publishes targets that satisfy `published`, then until the boards
  // satisfy `applied`. Checks each hop in the rounds that drive it, so a slow machine stretches rounds but
  // does not change the count: the extender within two telemetry rounds (the change may land just after a
  // round read the cap), the agent within three of its rounds (one may be under way with the old document);
  // with --interval a fifth of interval_s that is within two telemetry intervals end to end. The telemetry
  // rounds from the change to the boards are recorded as the property `name` (--gtest_output).
  void ReachesWithinRounds(const std::string& name, const std::function<void()>& change,
                           const std::function<bool()>& published, const std::function<bool()>& applied) {
    const int before = prometheus_.queries();
    change();
    ASSERT_TRUE(Eventually(published)) << Diagnose();
    EXPECT_LE(prometheus_.queries() - before, 2) << "telemetry rounds until the extender published\n" << Diagnose();
    const int64_t agent_before = AgentRounds();
    ASSERT_TRUE(Eventually(applied)) << Diagnose();
    EXPECT_LE(AgentRounds() - agent_before, 3) << "agent rounds until the boards followed\n" << Diagnose();
    RecordProperty(name, prometheus_.queries() - before);
  }

  std::string dir_, nvml_state_;
  FakePrometheus prometheus_;
  Child api_, extender_, agent_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<v1::Placement::Stub> stub_;
  int grpc_port_ = 0;
};

TEST_F(SteeringProcessTest, CapLoweredBy30PercentLowersEveryGpuAndItsReturnRestoresThem) {
  SetCap(12);
  ASSERT_TRUE(Eventually([&] { return LimitsAre(Declared()); })) << Diagnose();
  ReachesWithinRounds(
      "rounds_down", [&] { SetCap(12 * 0.7); }, [&] { return !HeldTargets().empty(); }, [&] { return SteeredDown(); });
  // The steered limits hold the rack under its cap: idle 5 kW plus 4 GPUs of each pod at their target.
  std::map<std::string, std::pair<int64_t, int64_t>> t = Targets();
  EXPECT_LE(5'000'000 + 4 * t["a"].first + 4 * t["b"].first, 8'400'000) << Diagnose();
  ReachesWithinRounds(
      "rounds_up", [&] { SetCap(12); }, [&] { return TargetsDeclared(); }, [&] { return LimitsAre(Declared()); });
  EXPECT_EQ(Bound(), "ml/a u-a gpu001 4\nml/b u-b gpu001 4\n");  // nobody evicted
  EXPECT_FALSE(absl::StrContains(extender_.Log(), "evict")) << extender_.Log();
  const std::string agent_log = agent_.Log();
  EXPECT_TRUE(absl::StrContains(agent_log, "steered limits (generation ")) << agent_log;
  // The metrics are read back from NVML at the end of the round that set the limits: wait for it.
  httplib::Client metrics("127.0.0.1", agent_.port());
  std::string body;
  EXPECT_TRUE(Eventually([&] {
    auto m = metrics.Get("/metrics");
    body = m ? m->body : "";
    return absl::StrContains(body, "rackwise_node_agent_gpu_power_limit_watts{gpu=\"0\",pod=\"ml/a\"} 600.000");
  })) << body;
  EXPECT_TRUE(absl::StrContains(body, "rackwise_node_agent_limits_fetch_failures_total 0")) << body;
}

TEST_F(SteeringProcessTest, MeasuredOverdrawLowersEveryGpuAndItsEndRestoresThem) {
  SetCap(12);
  ASSERT_TRUE(Eventually([&] { return LimitsAre(Declared()); })) << Diagnose();
  // Something outside rackwise's ledger starts drawing 5 kW on gpu002: the rack measures 13 kW.
  ReachesWithinRounds(
      "rounds_down", [&] { prometheus_.Set("gpu002", 5000); }, [&] { return !HeldTargets().empty(); },
      [&] { return SteeredDown(); });
  ReachesWithinRounds(
      "rounds_up", [&] { prometheus_.Set("gpu002", 0); }, [&] { return TargetsDeclared(); },
      [&] { return LimitsAre(Declared()); });
  EXPECT_EQ(Bound(), "ml/a u-a gpu001 4\nml/b u-b gpu001 4\n");
}

// The extender going away leaves the steered limits in force (never lifted by an outage), and the agent says so.
TEST_F(SteeringProcessTest, SteeredLimitsStayWhileTheExtenderIsAway) {
  SetCap(12 * 0.7);
  ASSERT_TRUE(Eventually([&] { return SteeredDown(); })) << Diagnose();
  const std::vector<int64_t> steered = Limits();
  extender_.Stop();
  ASSERT_TRUE(Eventually([&] { return absl::StrContains(agent_.Log(), "stay in force"); })) << agent_.Log();
  httplib::Client metrics("127.0.0.1", agent_.port());
  ASSERT_TRUE(Eventually([&] {
    auto m = metrics.Get("/metrics");
    return m && absl::StrContains(m->body, "rackwise_node_agent_steered_limit_watts{pod=\"ml/a\"}") &&
           !absl::StrContains(m->body, "rackwise_node_agent_limits_fetch_failures_total 0\n");
  }));
  EXPECT_EQ(Limits(), steered);
}

}  // namespace
}  // namespace rackwise::node_agent
