// Runs the real `rackwise` binary and checks what scripts rely on: JSON keys, exit codes, error formats.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

struct CliRun {
  int code = -1;
  std::string out;
};

CliRun Rackwise(const std::string& args) {
  CliRun r;
  const std::string cmd = std::string(RACKWISE_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const std::string kDemo = std::string(RACKWISE_SOURCE_DIR) + "/examples/demo.yaml";

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = std::string(::testing::TempDir()) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CliContractTest, PlacePrintsTheDecisionJson) {
  CliRun r = Rackwise("place --cluster " + kDemo + " --gpus 16 --gpus-per-node 8 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["nodes"].size(), 2u);
  for (const auto& node : j["nodes"]) EXPECT_EQ(j["gpus"][node.get<std::string>()].size(), 8u);
  EXPECT_EQ(j["domains"], 2);
  EXPECT_EQ(j["racks"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["watts"][j["racks"][0].get<std::string>()].get<double>(), 16 * 962.5);
  EXPECT_EQ(j["telemetry"], "off");  // no telemetry: section: estimates only
  EXPECT_EQ(j["measured_watts"], nlohmann::json::object());
}

TEST(CliContractTest, UnreachableTelemetryFallsBackToEstimatesAndSaysSo) {
  std::ifstream in(kDemo);
  std::stringstream text;
  text << in.rdbuf() << "telemetry:\n  prometheus_url: http://127.0.0.1:1\n  node_power_query: q\n";
  const std::string yaml = WriteTemp("telemetry-unreachable.yaml", text.str());
  CliRun r = Rackwise("place --cluster " + yaml + " --gpus 8 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  // stderr (merged, unbuffered) says why first; the JSON is the last line.
  EXPECT_EQ(
      r.out.rfind("rackwise: telemetry: node power query failed: prometheus: http://127.0.0.1:1/api/v1/query:", 0), 0u)
      << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1));
  EXPECT_EQ(j["telemetry"], "stale");
  EXPECT_EQ(j["measured_watts"], nlohmann::json::object());
  r = Rackwise("place --cluster " + yaml + " --gpus 8 --json --no-telemetry");
  EXPECT_EQ(nlohmann::json::parse(r.out)["telemetry"], "off");
  r = Rackwise("explain --cluster " + yaml + " --gpus 8");
  EXPECT_NE(r.out.find("MEAS kW"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("telemetry: stale (0 of"), std::string::npos) << r.out;
}

// The JSON document a command prints last, one line or indented (stderr, merged, may say why telemetry failed
// first).
nlohmann::json LastJson(const std::string& out) {
  const size_t at = out.rfind("\n{");
  return nlohmann::json::parse(at == std::string::npos ? out : out.substr(at + 1));
}

TEST(CliContractTest, ExplainSaysWhyOversubscriptionIsOffAndStatusListsTheJobsCountedLess) {
  std::ifstream in(kDemo);
  std::stringstream text;  // demo.yaml ends with its policy: section
  text << in.rdbuf() << "  oversubscribe_pct: 20\ntelemetry:\n  prometheus_url: http://127.0.0.1:1\n"
       << "  node_power_query: q\n  on_overdraw: lower_limits\n";
  const std::string yaml = WriteTemp("oversubscribed.yaml", text.str());
  CliRun r = Rackwise("explain --cluster " + yaml + " --gpus 8 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(LastJson(r.out)["oversubscription_off"],
            "oversubscription is off while telemetry is stale: jobs count their declared watts")
      << r.out;
  // The Slurm plugin's published ledger: job 7 counted 770 W per GPU, declared 962.5 W.
  const std::string state = WriteTemp("oversubscribed-state.yaml", R"(allocations:
  - id: '7'
    watts_per_gpu: 770
    nodes:
      - node: gpu001
        gpus: [0, 1, 2, 3, 4, 5, 6, 7]
oversubscribed:
  - id: '7'
    declared_watts_per_gpu: 962.5
    counted_watts_per_gpu: 770
)");
  r = Rackwise("status --cluster " + yaml + " --state " + state + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = LastJson(r.out);
  ASSERT_EQ(j["oversubscribed"].size(), 1u) << r.out;
  EXPECT_EQ(j["oversubscribed"][0]["id"], "7");
  EXPECT_EQ(j["oversubscribed"][0]["counted_watts_per_gpu"], 770);
  EXPECT_EQ(j["oversubscribed"][0]["declared_watts_per_gpu"], 962.5);
}

TEST(CliContractTest, DefaultsToTheBuiltInExample) {
  CliRun r = Rackwise("place --gpus 72 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["domains"], 1);  // a whole NVL72 rack
}

TEST(CliContractTest, RefusalHasItsOwnExitCodeAndCountsNodes) {
  // gpu001-gpu011 busy, gpu012 drained: only r04 is left, whose 30 kW cap powers two full nodes, not four.
  const std::string state = WriteTemp("state.yaml", R"(allocations:
  - id: big
    nodes:
      - {node: gpu001, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
      - {node: gpu002, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
      - {node: gpu003, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
      - {node: gpu004, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
      - {node: gpu005, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
      - {node: gpu006, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
      - {node: gpu007, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
      - {node: gpu008, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
      - {node: gpu009, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
      - {node: gpu010, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
      - {node: gpu011, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
nodes:
  - {node: gpu012, health: drained}
)");
  CliRun r = Rackwise("place --cluster " + kDemo + " --state " + state +
                      " --gpus 32 --gpus-per-node 8 --node-type hgx-h100 --locality required --json");
  ASSERT_EQ(r.code, 3) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["refused"].get<bool>());
  EXPECT_FALSE(j["unresolvable"].get<bool>());
  EXPECT_EQ(j["reasons"]["Node drained"], 1);
  EXPECT_EQ(j["reasons"]["Insufficient free GPUs"], 11);
  EXPECT_EQ(j["reasons"]["Not enough GPUs together"], 4);
  EXPECT_EQ(j["detail"], "rack r04 would need 30.8 kW for 32 GPUs, 20.0 kW left.");
  EXPECT_EQ(j["reasons"]["Wrong node type"], 72);
  EXPECT_NE(j["message"].get<std::string>().find("0/88 nodes are available"), std::string::npos);
}

// policy.preferred_wait_s: a `preferred` job that cannot have its fewest NVLink domains now is refused until
// --waited reaches the policy's wait; then it spreads.
TEST(CliContractTest, PreferredJobSpreadsOnlyAfterThePolicysWait) {
  const std::string cluster = WriteTemp("wait.yaml", R"(cluster: wait
node_types:
  - {name: tray, gpus: 4, nvlink: rack, node_watts: 6600, idle_watts: 1500}
racks:
  - {name: a, type: tray, nodes: "a[1-2]", power_cap_kw: 40}
  - {name: b, type: tray, nodes: "b[1-2]", power_cap_kw: 40}
  - {name: c, type: tray, nodes: "c[1-2]", power_cap_kw: 40}
policy: {preferred_wait_s: 600}
)");
  const std::string state = WriteTemp("wait-state.yaml", R"(allocations:
  - {id: x, nodes: [{node: a1, gpus: [0, 1, 2, 3]}]}
  - {id: y, nodes: [{node: b1, gpus: [0, 1, 2, 3]}]}
  - {id: z, nodes: [{node: c1, gpus: [0, 1, 2, 3]}]}
)");
  const std::string job = "place --cluster " + cluster + " --state " + state + " --gpus 8 --locality preferred --json";
  CliRun early = Rackwise(job + " --waited 599");
  EXPECT_EQ(early.code, 3) << early.out;  // refused for now, not unresolvable
  CliRun late = Rackwise(job + " --waited 600");
  ASSERT_EQ(late.code, 0) << late.out;
  EXPECT_EQ(nlohmann::json::parse(late.out)["domains"], 2);
  EXPECT_EQ(Rackwise(job + " --waited -1").code, 2);
}

TEST(CliContractTest, NeverPossibleIsUnresolvable) {
  CliRun r = Rackwise("place --cluster " + kDemo + " --gpus 100000");
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_NE(r.out.find("cannot ever place"), std::string::npos) << r.out;
}

TEST(CliContractTest, BenchTimesFitsAndRefusalsAndSavesAFilledState) {
  const std::string state = std::string(::testing::TempDir()) + "/bench-state.yaml";
  CliRun fit =
      Rackwise("bench --cluster " + kDemo + " --gpus 8 --repeat 20 --fill 50 --save-state " + state + " --json");
  ASSERT_EQ(fit.code, 0) << fit.out;
  nlohmann::json j = nlohmann::json::parse(fit.out);
  EXPECT_EQ(j["outcome"], "fit");
  EXPECT_EQ(j["repeat"], 20);
  EXPECT_GE(j["occupancy_pct"].get<double>(), 50.0);
  EXPECT_GT(j["filled_allocations"].get<int>(), 0);
  EXPECT_LE(j["median_us"].get<double>(), j["p99_us"].get<double>());
  EXPECT_LE(j["p99_us"].get<double>(), j["max_us"].get<double>());
  EXPECT_TRUE(j["decision"].contains("nodes"));
  // The saved state loads back with the same allocations; a job too large is timed as a refusal.
  CliRun refused = Rackwise("bench --cluster " + kDemo + " --state " + state + " --gpus 100000 --repeat 5 --json");
  ASSERT_EQ(refused.code, 0) << refused.out;
  nlohmann::json k = nlohmann::json::parse(refused.out);
  EXPECT_EQ(k["outcome"], "refused");
  EXPECT_EQ(k["allocations"], j["allocations"]);
  EXPECT_EQ(k["decision"]["refused"], true);
}

TEST(CliContractTest, ExplainNamesTheBindingRack) {
  // Fill nvl04 (capped at 100 kW: 27 kW idle + 57 GPUs at 1.275 kW) with 48 GPUs via state, then ask for 16 GPUs
  // restricted to nvl04: the rack has the GPUs but not the power.
  std::string nodes;
  for (int t = 1; t <= 12; ++t) {
    char line[96];
    std::snprintf(line, sizeof line, "      - {node: nvl04-t%02d, gpus: [0, 1, 2, 3]}\n", t);
    nodes += line;
  }
  const std::string state = WriteTemp("state2.yaml", "allocations:\n  - id: a\n    nodes:\n" + nodes);
  CliRun r = Rackwise("explain --cluster " + kDemo + " --state " + state + " --gpus 16 --nodes 'nvl04-t[13-18]'");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("rack nvl04 would need 20.4 kW for 16 GPUs, 11.8 kW left."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvl04"), std::string::npos);
}

TEST(CliContractTest, BadInputIsAClearErrorNotACrash) {
  CliRun missing = Rackwise("place --cluster /nonexistent.yaml --gpus 1");
  EXPECT_EQ(missing.code, 1) << missing.out;
  EXPECT_NE(missing.out.find("/nonexistent.yaml"), std::string::npos) << missing.out;
  const std::string bad = WriteTemp("bad.yaml", "cluster: x\nnode_types:\n  - name: a\n    gpus: many\n");
  CliRun r = Rackwise("place --cluster " + bad + " --gpus 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(bad + ":4:"), std::string::npos) << r.out;
  EXPECT_EQ(Rackwise("place --gpus 0").code, 2);
  EXPECT_EQ(Rackwise("place --gpus 6 --gpus-per-node 4").code, 2);
  EXPECT_EQ(Rackwise("place --gpus 4 --nodes 'nosuch[1-2]'").code, 2);
  EXPECT_EQ(Rackwise("frobnicate").code, 2);
}

}  // namespace
