// GPUs from DRA claims over real HTTP: the rackwise-extender binary against rackwise_test_fake_apiserver serving
// recorded upstream objects (testdata/dra_objects.json: DeviceClasses, ResourceClaimTemplates, ResourceSlices as
// NVIDIA's driver publishes them, a ComputeDomain, a Workload API PodGroup). The test plays kube-scheduler: it
// creates pods and their claims, allocates claims (as the DynamicResources plugin does before bind) and calls
// filter and bind. Checked: a 4-GPU claim on a rack at its cap is refused for power; bound, it is counted in
// /metrics with its watts, as a 4-GPU device-plugin pod is; a ComputeDomain channel beside nvidia.com/gpu: 4 is
// 4 GPUs; 18 pods of a ComputeDomain land in one NVL72 rack; a restart and a relist after 410 rebuild the same
// ledger from the claims.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "dra_test_objects.h"
#include "extender_process.h"
#include "rackwise/testing/child_process.h"

namespace rackwise::k8s {
namespace {

using Json = nlohmann::json;
using rackwise::testing::Eventually;
using testing::ExtenderProcess;

// r01 (gpu001-004) is capped tight, r02 (gpu005-008) is not; two NVL72 racks of 18 trays.
constexpr char kDescription[] = R"(cluster: dra
node_types:
  - name: hgx-h100
    gpus: 8
    nvlink: node
    gpu_watts: 700
    node_watts: 10200
    idle_watts: 2500
  - name: gb200-tray
    gpus: 4
    nvlink: rack
    gpu_watts: 1200
    node_watts: 6600
    idle_watts: 1500
racks:
  - name: r01
    type: hgx-h100
    nodes: gpu[001-004]
    power_cap_kw: 20
  - name: r02
    type: hgx-h100
    nodes: gpu[005-008]
    power_cap_kw: 41
  - name: nvl01
    type: gb200-tray
    nodes: nvl01-t[01-18]
    power_cap_kw: 132
  - name: nvl02
    type: gb200-tray
    nodes: nvl02-t[01-18]
    power_cap_kw: 132
)";

std::vector<std::string> NodeNames(const std::string& prefix, int from, int to, const char* format) {
  std::vector<std::string> out;
  for (int i = from; i <= to; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, format, prefix.c_str(), i);
    out.push_back(name);
  }
  return out;
}

// The fake API server as a child process; its port is read from its first line.
class FakeApiServerProcess {
 public:
  ~FakeApiServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  std::string Start(const std::vector<std::string>& args, const std::string& out_path) {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::FILE* out = std::freopen(out_path.c_str(), "w", stdout);
      (void)out;
      std::vector<char*> argv{const_cast<char*>(RACKWISE_FAKE_APISERVER_BIN)};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(RACKWISE_FAKE_APISERVER_BIN, argv.data());
      std::_Exit(127);
    }
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         std::chrono::steady_clock::now() < until;) {
      std::ifstream in(out_path);
      std::string line;
      if (std::getline(in, line) && line.rfind("listening on 127.0.0.1:", 0) == 0 && !in.eof()) {
        port_ = std::stoi(line.substr(std::string("listening on 127.0.0.1:").size()));
        return "";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "the fake API server did not start";
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

class DraProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("rackwise-dra-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "rackwise.yaml") << kDescription;
    std::vector<std::string> nodes = NodeNames("gpu", 1, 8, "%s%03d");
    for (const char* rack : {"nvl01", "nvl02"}) {
      for (const std::string& n : NodeNames(rack, 1, 18, "%s-t%02d")) nodes.push_back(n);
    }
    std::string list;
    for (const std::string& n : nodes) list += (list.empty() ? "" : ",") + n;
    ASSERT_EQ(api_.Start({"--nodes", list, "--objects", RACKWISE_K8S_TESTDATA "/dra_objects.json"},
                         (dir_ / "apiserver.out").string()),
              "");
    std::ofstream(dir_ / "kubeconfig") << "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
                                       << "    server: http://127.0.0.1:" << api_.port() << "\ncontexts:\n"
                                       << "- name: fake\n  context: {cluster: fake, user: test}\n"
                                       << "current-context: fake\nusers:\n- name: test\n  user: {}\n";
    StartExtender();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void StartExtender() {
    extender_ = std::make_unique<ExtenderProcess>();
    ASSERT_EQ(extender_->Start(
                  RACKWISE_EXTENDER_BIN,
                  {"--cluster", (dir_ / "rackwise.yaml").string(), "--kubeconfig", (dir_ / "kubeconfig").string(),
                   "--listen", "127.0.0.1:0", "--grpc-listen", "", "--state-file", (dir_ / "state.yaml").string()},
                  (dir_ / ("extender-" + std::to_string(++starts_) + ".log")).string()),
              "");
    ASSERT_TRUE(Eventually([&] {
      auto r = Extender().Get("/readyz");
      return r && r->status == 200;
    })) << extender_->Log();
  }

  httplib::Client Extender() { return httplib::Client("127.0.0.1", extender_->port()); }
  httplib::Client Api() { return httplib::Client("127.0.0.1", api_.port()); }

  void PostApi(const std::string& path, const Json& body) {
    auto r = Api().Post(path, body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_LT(r->status, 300) << r->body;
  }

  // A pod in ml with `gpus` nvidia.com/gpu and claims from `templates`, created in the API server.
  Json CreatePod(const std::string& name, int gpus, const std::vector<std::string>& templates) {
    Json pod = testing::DraPodJson(name, templates, gpus);
    PostApi("/_test/pods", pod);
    return pod;
  }

  // The claim of `pod` from template `tmpl` asking `count` GPUs; allocated GPUs `devices` of `node` (and reserved
  // for the pod) when given, as the scheduler's DynamicResources plugin writes it.
  void PutClaim(const std::string& pod, const std::string& tmpl, int count, const std::string& node = "",
                const std::vector<int>& devices = {}) {
    std::vector<std::string> names;
    for (int d : devices) names.push_back("gpu-" + std::to_string(d));
    Json claim = testing::ClaimJson(pod + "-" + tmpl, count, names, node);
    claim["metadata"]["annotations"] = {{"resource.kubernetes.io/pod-claim-name", tmpl}};
    claim["metadata"]["ownerReferences"] = {
        {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod}, {"uid", "uid-" + pod}, {"controller", true}}};
    if (!devices.empty()) {
      const Json term = {{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}}}};
      claim["status"]["allocation"]["nodeSelector"] = {{"nodeSelectorTerms", {term}}};
      claim["status"]["reservedFor"] = {{{"resource", "pods"}, {"name", pod}, {"uid", "uid-" + pod}}};
    }
    PostApi("/_test/objects", claim);
  }

  // filter over `nodes`: the feasible names and every failure reason.
  std::pair<std::vector<std::string>, std::set<std::string>> Filter(const Json& pod,
                                                                    const std::vector<std::string>& nodes) {
    Json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nodes}};
    auto r = Extender().Post("/filter", args.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200);
    if (!r) return {};
    Json result = Json::parse(r->body);
    EXPECT_TRUE(result["Error"].is_null() || result["Error"] == "") << result["Error"];
    std::vector<std::string> feasible;
    if (result["NodeNames"].is_array()) feasible = result["NodeNames"].get<std::vector<std::string>>();
    std::set<std::string> reasons;
    for (const char* field : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
      if (!result[field].is_object()) continue;
      for (const auto& [node, why] : result[field].items()) reasons.insert(why.get<std::string>());
    }
    return {feasible, reasons};
  }

  std::string Bind(const std::string& pod, const std::string& node) {
    Json args = {{"PodName", pod}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + pod}, {"Node", node}};
    auto r = Extender().Post("/bind", args.dump(), "application/json");
    if (!r || r->status != 200) return "no answer";
    return Json::parse(r->body).value("Error", "");
  }

  // rackwise_rack_draw_watts per rack and rackwise_domain_free_gpus per domain, from /metrics.
  std::map<std::string, std::string> Ledger() {
    auto r = Extender().Get("/metrics");
    std::map<std::string, std::string> out;
    if (!r) return out;
    std::istringstream in(r->body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("rackwise_rack_draw_watts{", 0) == 0 || line.rfind("rackwise_domain_free_gpus{", 0) == 0) {
        const size_t space = line.rfind(' ');
        out[line.substr(0, space)] = line.substr(space + 1);
      }
    }
    return out;
  }
  double RackDraw(const std::string& rack) {
    auto ledger = Ledger();
    auto it = ledger.find("rackwise_rack_draw_watts{rack=\"" + rack + "\"}");
    return it == ledger.end() ? -1 : std::stod(it->second);
  }

  std::filesystem::path dir_;
  FakeApiServerProcess api_;
  std::unique_ptr<ExtenderProcess> extender_;
  int starts_ = 0;
};

TEST_F(DraProcessTest, ClaimedGpusAreRefusedForPowerCountedWithTheirWattsAndRebuiltAfterARestart) {
  const std::vector<std::string> r01 = NodeNames("gpu", 1, 4, "%s%03d"), r02 = NodeNames("gpu", 5, 8, "%s%03d");
  // Fill r01 with device-plugin pods until its cap refuses a 4-GPU pod.
  bool capped = false;
  for (int i = 0; i < 8 && !capped; ++i) {
    const Json pod = CreatePod("fill-" + std::to_string(i), 4, {});
    auto [feasible, reasons] = Filter(pod, r01);
    if (feasible.empty()) {
      capped = true;
      break;
    }
    ASSERT_EQ(Bind("fill-" + std::to_string(i), feasible[0]), "");
  }
  ASSERT_TRUE(capped) << "r01's cap never bound";
  // The same 4 GPUs from a claim: refused on r01 exactly as a 4-GPU device-plugin pod is, and for power where
  // GPUs are free.
  Json dra = CreatePod("dra", 0, {"gpu4"});
  PutClaim("dra", "gpu4", 4);
  const auto verdicts = Filter(dra, r01);
  EXPECT_TRUE(verdicts.first.empty());
  EXPECT_EQ(verdicts, Filter(CreatePod("probe", 4, {}), r01));
  EXPECT_TRUE(std::any_of(verdicts.second.begin(), verdicts.second.end(), [](const std::string& why) {
    return why.find("Rack power cap") != std::string::npos;
  })) << *verdicts.second.begin();

  // On r02 it fits; the scheduler allocates GPUs 4-7 of gpu005, then binds through the extender.
  const double before = RackDraw("r02");
  auto [feasible, unused] = Filter(dra, r02);
  ASSERT_FALSE(feasible.empty());
  PutClaim("dra", "gpu4", 4, "gpu005", {4, 5, 6, 7});
  ASSERT_EQ(Bind("dra", "gpu005"), "");
  const double with_dra = RackDraw("r02");
  EXPECT_GT(with_dra, before);
  // A device-plugin pod of 4 GPUs adds the same watts; a ComputeDomain channel beside nvidia.com/gpu: 4 too (a
  // domain of one node: no group).
  const Json plugin = CreatePod("plugin", 4, {});
  ASSERT_FALSE(Filter(plugin, {"gpu006"}).first.empty());
  ASSERT_EQ(Bind("plugin", "gpu006"), "");
  const double with_plugin = RackDraw("r02");
  EXPECT_DOUBLE_EQ(with_plugin - with_dra, with_dra - before);
  const Json channel = CreatePod("cd", 4, {"solo-channel"});
  ASSERT_FALSE(Filter(channel, {"gpu007"}).first.empty());
  ASSERT_EQ(Bind("cd", "gpu007"), "");
  EXPECT_DOUBLE_EQ(RackDraw("r02") - with_plugin, with_dra - before);

  // A restart rebuilds the same ledger from the API server's pods and claims (bindings are posted before bind
  // answers, so the lists hold them).
  const auto want = Ledger();
  extender_->Kill();
  StartExtender();
  EXPECT_EQ(Ledger(), want) << extender_->Log();

  // The API server compacts: the extender's watches get 410 and relist; the DRA pod deleted meanwhile leaves
  // the ledger with its claim's 4 GPUs.
  const double per_pod = with_dra - before, settled = RackDraw("r02");
  PostApi("/_test/compact", Json::object());
  auto del = Api().Delete("/_test/pods/ml/dra");
  ASSERT_TRUE(del && del->status == 200);
  EXPECT_TRUE(Eventually([&] { return RackDraw("r02") == settled - per_pod; })) << extender_->Log();
  EXPECT_NE(extender_->Log().find("is gone (410); relisting"), std::string::npos) << extender_->Log();
}

// 18 pods of one ComputeDomain (numNodes 18), 4 GPUs each from a claim template: one group, in one NVL72 rack.
// nvl01 has one GPU taken, so only nvl02 can hold the whole domain.
TEST_F(DraProcessTest, AComputeDomainsEighteenPodsLandInOneClique) {
  std::vector<std::string> trays = NodeNames("nvl01", 1, 18, "%s-t%02d");
  for (const std::string& n : NodeNames("nvl02", 1, 18, "%s-t%02d")) trays.push_back(n);
  const Json taken = CreatePod("taken", 1, {});
  ASSERT_FALSE(Filter(taken, {"nvl01-t01"}).first.empty());
  ASSERT_EQ(Bind("taken", "nvl01-t01"), "");
  std::set<std::string> racks;
  for (int i = 0; i < 18; ++i) {
    const std::string name = "worker-" + std::to_string(i);
    const Json pod = CreatePod(name, 0, {"gpu4", "train-channel"});
    PutClaim(name, "gpu4", 4);
    auto [feasible, reasons] = Filter(pod, trays);
    ASSERT_FALSE(feasible.empty()) << name << ": " << (reasons.empty() ? "" : *reasons.begin());
    ASSERT_EQ(Bind(name, feasible[0]), "");
    racks.insert(feasible[0].substr(0, 5));
  }
  EXPECT_EQ(racks, (std::set<std::string>{"nvl02"}));
}

}  // namespace
}  // namespace rackwise::k8s
