// rackwise-node-agent, the real binary, against:
//  - a local kubelet: a gRPC server implementing v1.PodResourcesLister/List on a unix socket, from the same
//    protocol file the agent is built with;
//  - the fake API server (rackwise/testing/fake_api_server.h) in process, answering the agent's pod list for its
//    node (GET /api/v1/pods?fieldSelector=spec.nodeName=...) in pages of two, as a server may;
//  - the fake libnvidia-ml.so.1 (tests/fake_nvml), whose state file shows each board's limit and whose log shows
//    every NVML call.
// Tests wait on states (a limit in the fake's state, a metric), and fail at once with the agent's log if it dies.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
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
#include "podresources/v1/api.grpc.pb.h"
#include "rackwise/testing/child_process.h"
#include "rackwise/testing/fake_api_server.h"

namespace rackwise::node_agent {
namespace {

using k8s::Json;

Json Pod(const std::string& name, const std::string& uid, const std::string& watts, int gpus = 2) {
  Json pod = {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", uid}}},
              {"spec",
               {{"nodeName", "gpu001"},
                {"containers", {{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", gpus}}}}}}}}}},
              {"status", {{"phase", "Running"}}}};
  if (!watts.empty()) pod["metadata"]["annotations"] = {{"rackwise.io/gpu-watts", watts}};
  return pod;
}

class NodeAgentProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "rackwise_node_agent_it.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    ASSERT_TRUE(api_.Start().ok());
    nvml_state_ = dir_ + "/fake_nvml.state";
    std::ofstream(nvml_state_) << "gpu GPU-aaaa-0 200000 700000 700000 700000 91000\n"
                                  "gpu GPU-aaaa-1 200000 700000 700000 700000 92000\n"
                                  "gpu GPU-aaaa-2 200000 700000 700000 700000 93000\n"
                                  "gpu GPU-aaaa-3 200000 700000 700000 700000 94000\n";
    kubelet_ = std::make_unique<FakeKubelet>(dir_ + "/kubelet.sock");
    ASSERT_TRUE(kubelet_->ok());
    std::ofstream(dir_ + "/kubeconfig") << "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                                        << "clusters:\n- name: t\n  cluster:\n    server: http://127.0.0.1:"
                                        << api_.port() << "\ncontexts:\n- name: t\n  context:\n    cluster: t\n"
                                        << "    user: u\nusers:\n- name: u\n  user:\n    token: agent-token\n";
  }
  void TearDown() override {
    StopAgent(SIGTERM);
    kubelet_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  void StartAgent() {
    const std::string log = dir_ + "/agent.log";
    // Everything is prepared before fork: the child of a threaded process may only call async-signal-safe
    // functions until exec.
    std::vector<std::string> args = {RACKWISE_NODE_AGENT_BIN,
                                     "--node-name",
                                     "gpu001",
                                     "--kubeconfig",
                                     dir_ + "/kubeconfig",
                                     "--pod-resources",
                                     "unix://" + dir_ + "/kubelet.sock",
                                     "--nvml-library",
                                     RACKWISE_FAKE_NVML_LIB,
                                     "--state-file",
                                     dir_ + "/state/leases",
                                     "--interval",
                                     "0.1",
                                     "--listen",
                                     "127.0.0.1:0"};
    std::vector<std::string> env = {"RACKWISE_FAKE_NVML_STATE=" + nvml_state_};
    for (char** e = environ; *e != nullptr; ++e) {
      if (!absl::StartsWith(*e, "RACKWISE_FAKE_NVML_STATE=")) env.emplace_back(*e);
    }
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    for (std::string& e : env) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    const size_t log_start = ReadAll(log).size();
    int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(log_fd, 0);
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      dup2(log_fd, 2);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(log_fd);
    // The metrics port, from the log line naming it (this agent's: the log may hold a previous one's).
    ASSERT_TRUE(Eventually([&] {
      std::string text = ReadAll(log).substr(log_start);
      size_t at = text.find("on http://127.0.0.1:");
      if (at == std::string::npos) return false;
      return absl::SimpleAtoi(text.substr(at + 20, text.find(';', at) - at - 20), &metrics_port_);
    })) << ReadAll(log);
  }
  void StopAgent(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // Polls `done` for up to 20 s; fails at once (with the agent's log) if the agent exits.
  bool Eventually(const std::function<bool()>& done) {
    const std::string why = rackwise::testing::WaitFor("the agent's state", done, std::chrono::seconds(20), [&] {
      int status = 0;
      if (pid_ <= 0 || waitpid(pid_, &status, WNOHANG) != pid_) return std::string();
      pid_ = -1;
      return absl::StrCat("rackwise-node-agent exited (status ", status, "):\n", ReadAll(dir_ + "/agent.log"));
    });
    if (!why.empty() && absl::StrContains(why, "exited")) ADD_FAILURE() << why;
    return why.empty();
  }

  // The limit in force on each board, from the fake NVML's state file.
  std::vector<int64_t> Limits() { return FakeNvmlLimits(nvml_state_); }
  // "gpu=<i> limit=<mw>" of every nvmlDeviceSetPowerManagementLimit call, in order.
  std::vector<std::string> SetCalls() {
    std::vector<std::string> out;
    for (absl::string_view line : absl::StrSplit(ReadAll(nvml_state_ + ".log"), '\n', absl::SkipEmpty())) {
      size_t at = line.find("nvmlDeviceSetPowerManagementLimit ");
      if (at == absl::string_view::npos) continue;
      absl::string_view call = line.substr(at + 34);
      out.emplace_back(call.substr(0, call.find(" ->")));
    }
    return out;
  }
  // Waits until the calls logged are exactly `calls`, then checks that no further call comes in the agent's
  // next three rounds.
  bool SetCallsBecome(const std::vector<std::string>& calls) {
    if (!Eventually([&] { return SetCalls() == calls; })) return false;
    int64_t rounds = Rounds();
    if (!Eventually([&] { return Rounds() >= rounds + 3; })) return false;
    return SetCalls() == calls;
  }
  int64_t Rounds() {
    std::string m = Metrics();
    const std::string name = "\nrackwise_node_agent_rounds_total ";
    size_t at = m.find(name);
    int64_t n = -1;
    if (at != std::string::npos)
      absl::SimpleAtoi(m.substr(at + name.size(), m.find('\n', at + 1) - at - name.size()), &n);
    return n;
  }
  std::string Metrics() {
    httplib::Client cli("127.0.0.1", metrics_port_);
    httplib::Result res = cli.Get("/metrics");
    return res && res->status == 200 ? res->body : "";
  }
  bool MetricIs(const std::string& line) { return absl::StrContains(Metrics(), line + "\n"); }

  // The pods the API server holds now (the agent's selector picks gpu001's).
  void SetPods(std::vector<Json> pods) { ASSERT_TRUE(api_.ReplacePods(std::move(pods)).ok()); }
  // The field selector of the agent's last pod list.
  std::string PodListFieldSelector() {
    std::vector<rackwise::testing::FakeApiServer::RecordedRequest> lists = api_.Requests("GET", "/api/v1/pods");
    return lists.empty() ? "" : lists.back().param("fieldSelector");
  }

  std::string dir_, nvml_state_;
  rackwise::testing::FakeApiServer api_{{.nodes = {"gpu001"}, .max_page_items = 2}};
  std::unique_ptr<FakeKubelet> kubelet_;
  pid_t pid_ = -1;
  int metrics_port_ = 0;
};

const std::vector<int64_t> kDefaults = {700'000, 700'000, 700'000, 700'000};

TEST_F(NodeAgentProcessTest, PodGetsExactlyItsGpusLimitedUntilItIsGone) {
  SetPods({Pod("train", "u-train", "450"), Pod("plain", "u-plain", ""), Pod("other", "u-other", "300", 1)});
  kubelet_->SetPods({{"ml/train", {"GPU-aaaa-1", "GPU-aaaa-2"}}, {"ml/plain", {"GPU-aaaa-0"}}});
  StartAgent();
  ASSERT_TRUE(Eventually([&] {
    return Limits() == std::vector<int64_t>{700'000, 450'000, 450'000, 700'000};
  })) << ReadAll(dir_ + "/agent.log");
  // The call log is appended after the state changes: wait for it too.
  EXPECT_TRUE(SetCallsBecome({"gpu=1 limit=450000", "gpu=2 limit=450000"})) << ReadAll(nvml_state_ + ".log");
  EXPECT_EQ(PodListFieldSelector(), "spec.nodeName=gpu001");
  ASSERT_TRUE(Eventually([&] { return MetricIs("rackwise_node_agent_limits_applied_total 1"); })) << Metrics();
  EXPECT_TRUE(MetricIs("rackwise_node_agent_gpu_power_limit_watts{gpu=\"2\",pod=\"ml/train\"} 450.000")) << Metrics();
  EXPECT_TRUE(MetricIs("rackwise_node_agent_gpu_power_limit_watts{gpu=\"0\",pod=\"\"} 700.000")) << Metrics();

  // The pod ends: gone from the kubelet and the API server.
  kubelet_->SetPods({{"ml/plain", {"GPU-aaaa-0"}}});
  SetPods({Pod("plain", "u-plain", "")});
  ASSERT_TRUE(Eventually([&] { return Limits() == kDefaults; })) << ReadAll(dir_ + "/agent.log");
  EXPECT_TRUE(SetCallsBecome({"gpu=1 limit=450000", "gpu=2 limit=450000", "gpu=1 limit=700000", "gpu=2 limit=700000"}))
      << ReadAll(nvml_state_ + ".log");
  ASSERT_TRUE(Eventually([&] { return MetricIs("rackwise_node_agent_limits_restored_total 1"); })) << Metrics();
  EXPECT_TRUE(MetricIs("rackwise_node_agent_limits_failed_total{op=\"apply\"} 0"));
}

TEST_F(NodeAgentProcessTest, IndexDeviceIdsAndFinishedPods) {
  // The device plugin with --device-id-strategy=index; a replica suffix from time-slicing.
  SetPods({Pod("a", "u-a", "312.5"), Pod("b", "u-b", "250", 1)});
  kubelet_->SetPods({{"ml/a", {"0", "3::1"}}, {"ml/b", {"2"}}});
  StartAgent();
  ASSERT_TRUE(Eventually([&] {
    return Limits() == std::vector<int64_t>{312'500, 700'000, 250'000, 312'500};
  })) << ReadAll(dir_ + "/agent.log");
  // b finishes (phase Succeeded) while the kubelet still lists its devices: its limit goes.
  Json done = Pod("b", "u-b", "250", 1);
  done["status"]["phase"] = "Succeeded";
  SetPods({Pod("a", "u-a", "312.5"), done});
  ASSERT_TRUE(Eventually([&] {
    return Limits() == std::vector<int64_t>{312'500, 700'000, 700'000, 312'500};
  })) << ReadAll(dir_ + "/agent.log");
}

// GPUs a pod got through a DRA claim get the same limits as device-plugin GPUs, next to a device-plugin pod.
TEST_F(NodeAgentProcessTest, DraClaimedGpusAreLimitedLikeDevicePluginGpus) {
  SetPods({Pod("dra", "u-dra", "400", 0), Pod("plugin", "u-plugin", "300", 1)});
  kubelet_->SetPods({{"ml/dra", {"dra:gpu-1", "dra:gpu-3"}}, {"ml/plugin", {"GPU-aaaa-0"}}});
  StartAgent();
  ASSERT_TRUE(Eventually([&] {
    return Limits() == std::vector<int64_t>{300'000, 400'000, 700'000, 400'000};
  })) << ReadAll(dir_ + "/agent.log");
  kubelet_->SetPods({{"ml/plugin", {"GPU-aaaa-0"}}});
  SetPods({Pod("plugin", "u-plugin", "300", 1)});
  ASSERT_TRUE(Eventually([&] {
    return Limits() == std::vector<int64_t>{300'000, 700'000, 700'000, 700'000};
  })) << ReadAll(dir_ + "/agent.log");
}

TEST_F(NodeAgentProcessTest, KilledAgentRestoresPodsThatEndedWhileItWasDown) {
  SetPods({Pod("a", "u-a", "450", 1), Pod("b", "u-b", "300", 1)});
  kubelet_->SetPods({{"ml/a", {"GPU-aaaa-0"}}, {"ml/b", {"GPU-aaaa-1"}}});
  StartAgent();
  ASSERT_TRUE(Eventually([&] {
    return Limits() == std::vector<int64_t>{450'000, 300'000, 700'000, 700'000};
  })) << ReadAll(dir_ + "/agent.log");
  ASSERT_TRUE(SetCallsBecome({"gpu=0 limit=450000", "gpu=1 limit=300000"})) << ReadAll(nvml_state_ + ".log");
  StopAgent(SIGKILL);
  SetPods({Pod("a", "u-a", "450", 1)});
  kubelet_->SetPods({{"ml/a", {"GPU-aaaa-0"}}});
  EXPECT_EQ(Limits()[1], 300'000);  // nobody restores it while the agent is down
  StartAgent();
  ASSERT_TRUE(Eventually([&] {
    return Limits() == std::vector<int64_t>{450'000, 700'000, 700'000, 700'000};
  })) << ReadAll(dir_ + "/agent.log");
  // a's limit was found in the state file and kept, not set a second time.
  EXPECT_TRUE(SetCallsBecome({"gpu=0 limit=450000", "gpu=1 limit=300000", "gpu=1 limit=700000"}))
      << ReadAll(nvml_state_ + ".log");
}

TEST_F(NodeAgentProcessTest, BadWattsAreRefusedNotApplied) {
  SetPods({Pod("words", "u-w", "lots", 1), Pod("tiny", "u-t", "0.001", 1), Pod("huge", "u-h", "1e17", 1),
           Pod("ok", "u-ok", "400", 1)});
  kubelet_->SetPods({{"ml/words", {"GPU-aaaa-0"}},
                     {"ml/tiny", {"GPU-aaaa-1"}},
                     {"ml/huge", {"GPU-aaaa-2"}},
                     {"ml/ok", {"GPU-aaaa-3"}}});
  StartAgent();
  ASSERT_TRUE(Eventually([&] {
    std::string m = Metrics();
    return absl::StrContains(m, "rackwise_node_agent_pod_refused{namespace=\"ml\",pod=\"words\"} 1") &&
           absl::StrContains(m, "rackwise_node_agent_pod_refused{namespace=\"ml\",pod=\"tiny\"} 1") &&
           absl::StrContains(m, "rackwise_node_agent_pod_refused{namespace=\"ml\",pod=\"huge\"} 1") &&
           absl::StrContains(m, "rackwise_node_agent_limits_applied_total 1");
  })) << Metrics();
  EXPECT_EQ(Limits(), (std::vector<int64_t>{700'000, 700'000, 700'000, 400'000}));
  EXPECT_TRUE(SetCallsBecome({"gpu=3 limit=400000"})) << ReadAll(nvml_state_ + ".log");
  std::string log = ReadAll(dir_ + "/agent.log");
  // The core's watts bounds (power_bounds.h) refuse these before any board is asked.
  EXPECT_TRUE(absl::StrContains(log,
                                "pod ml/tiny: rackwise.io/gpu-watts not enforced: "
                                "metadata.annotations[rackwise.io/gpu-watts]: 0.001 is outside 1..10000"))
      << log;
  EXPECT_TRUE(absl::StrContains(log,
                                "pod ml/huge: rackwise.io/gpu-watts not enforced: "
                                "metadata.annotations[rackwise.io/gpu-watts]: 1e17 is outside 1..10000"))
      << log;
  EXPECT_TRUE(absl::StrContains(log, "'lots' is not a number of watts")) << log;
}

TEST_F(NodeAgentProcessTest, VersionAndHealth) {
  std::string out = dir_ + "/version.txt";
  std::string cmd = absl::StrCat(RACKWISE_NODE_AGENT_BIN, " --version > ", out);
  ASSERT_EQ(system(cmd.c_str()), 0);
  EXPECT_TRUE(absl::StartsWith(ReadAll(out), "rackwise-node-agent ")) << ReadAll(out);
  SetPods({});
  StartAgent();
  httplib::Client cli("127.0.0.1", metrics_port_);
  httplib::Result res = cli.Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ASSERT_TRUE(Eventually([&] {
    return kubelet_->lists() > 0 && MetricIs("rackwise_node_agent_round_failures_total{source=\"kubelet\"} 0");
  }));
}

}  // namespace
}  // namespace rackwise::node_agent
