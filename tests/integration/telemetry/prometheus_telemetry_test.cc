// Measured power end to end against Debian's real Prometheus scraping a DCGM-exporter-format page:
//  - raising one rack's measured draw toward its cap makes the extender's filter refuse that rack, with a
//    reason naming the measured watts, and `rackwise place --json` report it;
//  - stopping the exporter page makes both fall back to estimates and say so (/metrics, log, --json).
// Every wait is on a state (the target up, a query's value, the extender's answer), bounded by a timeout.
#include <cstdio>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "extender_fixture.h"
#include "prometheus_fixture.h"
#include "rackwise/cluster_description.h"
#include "rackwise/testing/child_process.h"
#include "telemetry_face.h"

namespace rackwise::k8s::testing {
namespace {

using rackwise::testing::DcgmExporterPage;
using rackwise::testing::PrometheusServer;

constexpr char kNodeQuery[] = "sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE)";

// 2 H100 racks x 4 nodes, 30 kW caps (idle 10 kW per rack), polled every second.
v1::ClusterDescription Described(const std::string& prometheus_url) {
  SyntheticClusterSpec spec;
  spec.name = "telemetry-test";
  spec.blocks.push_back({ReferenceSystem::kHgxH100, 2, 4, 30.0});
  v1::ClusterDescription d = BuildSyntheticCluster(spec);
  v1::Telemetry* t = d.mutable_telemetry();
  t->set_prometheus_url(prometheus_url);
  t->set_node_power_query(kNodeQuery);
  t->set_node_label("Hostname");
  t->set_interval_s(1);
  t->set_stale_after_s(5);
  return d;
}

// Polls `check` until it returns "" (done) or the time is up: "" or why not, with the last complaint.
std::string Settles(const std::function<std::string()>& check, int timeout_s) {
  std::string last;
  const std::string why = rackwise::testing::WaitFor(
      "the state", [&] { return (last = check()).empty(); }, std::chrono::seconds(timeout_s));
  return why.empty() ? "" : why + "; last: " + last;
}

// Runs a command and returns its stdout.
std::string RunCommand(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

class PrometheusTelemetryTest : public ExtenderHttpFixture {
 protected:
  void SetUp() override {
    page_.Start();
    for (int r = 0; r < 2; ++r)
      for (int n = 1; n <= 4; ++n) page_.SetGpuWatts(NodeName(r, n), 60);  // idle GPUs
    const std::string started = prometheus_.Start(page_.port());
    ASSERT_EQ(started, "");
    ASSERT_EQ(prometheus_.WaitForQuery(
                  "up{job=\"dcgm\"}", [](double v) { return v == 1; }, 60),
              "");
    ASSERT_EQ(prometheus_.WaitForQuery(
                  "count(DCGM_FI_DEV_POWER_USAGE)", [](double v) { return v == 64; }, 60),
              "");
    description_ = Described(prometheus_.url());
    StartExtender(true, nullptr, {}, {}, description_);
    poller_ = StartTelemetry(description_, service_.get(), [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_ += line + "\n";
    });
  }
  void TearDown() override {
    if (poller_) poller_->Stop();
    ExtenderHttpFixture::TearDown();
    prometheus_.Stop();
  }

  static std::string NodeName(int rack, int node) {
    char name[32];
    std::snprintf(name, sizeof name, "b0-r%04d-n%02d", rack, node);
    return name;
  }
  std::string LogText() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return log_;
  }
  std::string Metrics() {
    auto m = client_->Get("/metrics");
    return m ? m->body : "";
  }
  // The filter's answer for an 8-GPU pod on every node.
  Json Filter() { return Post("/filter", FilterBody(MakePod("train", 8), AllNodes())); }

  DcgmExporterPage page_{8};
  PrometheusServer prometheus_;
  v1::ClusterDescription description_;
  std::unique_ptr<telemetry::TelemetryPoller> poller_;
  std::mutex log_mu_;
  std::string log_;
};

TEST_F(PrometheusTelemetryTest, RackNearItsCapIsRefusedNamingMeasuredWattsThenStaleFallsBack) {
  // Fresh readings, low draw: every node can take the pod.
  ASSERT_EQ(
      Settles([&] { return Metrics().find("rackwise_telemetry_fresh 1") != std::string::npos ? "" : "not fresh"; }, 30),
      "")
      << LogText();
  EXPECT_EQ(Filter()["NodeNames"].size(), 8u);
  // The poller logs right after it applied the readings (which /metrics already shows).
  EXPECT_EQ(Settles(
                [&] {
                  return LogText().find("telemetry: fresh (2 of 2 racks measured)") == std::string::npos ? LogText()
                                                                                                         : "";
                },
                10),
            "");

  // Rack 0 draws 27.5 kW (10 kW idle + 32 GPUs x 546.875 W): an 8-GPU pod (7.7 kW) no longer fits under 30 kW.
  for (int n = 1; n <= 4; ++n) page_.SetGpuWatts(NodeName(0, n), 546.875);
  ASSERT_EQ(prometheus_.WaitForQuery(
                "sum(DCGM_FI_DEV_POWER_USAGE{Hostname=~\"b0-r0000-.*\"})", [](double v) { return v > 17000; }, 30),
            "");
  std::string reason;
  ASSERT_EQ(Settles(
                [&] {
                  Json f = Filter();
                  if (!f["FailedNodes"].is_object() || !f["FailedNodes"].contains(NodeName(0, 1))) return f.dump();
                  reason = f["FailedNodes"][NodeName(0, 1)].get<std::string>();
                  return std::string();
                },
                30),
            "");
  EXPECT_EQ(reason, "rackwise: Rack power cap: rack b0-r0000 measures 27.5 kW (estimate 10.0 kW; usable cap 30.0 kW)");
  Json f = Filter();
  EXPECT_EQ(f["NodeNames"].size(), 4u);  // rack 1 still takes it
  std::string m = Metrics();
  EXPECT_NE(m.find("rackwise_rack_measured_watts{rack=\"b0-r0000\"} 27500"), std::string::npos) << m;
  EXPECT_NE(m.find("rackwise_rack_estimated_watts{rack=\"b0-r0000\"} 10000"), std::string::npos) << m;

  // The CLI queries the same server once and reports what counted.
  const std::string yaml = ::testing::TempDir() + "/telemetry-cluster.yaml";
  {
    std::ofstream out(yaml);
    out << ClusterDescriptionToYaml(description_);
  }
  std::string place =
      RunCommand(std::string(RACKWISE_CLI) + " place --cluster " + yaml + " --gpus 8 --json 2>/dev/null");
  Json placed = Json::parse(place, nullptr, false);
  ASSERT_FALSE(placed.is_discarded()) << place;
  EXPECT_EQ(placed["telemetry"], "fresh") << place;
  EXPECT_EQ(placed["measured_watts"]["b0-r0000"].get<double>(), 27500) << place;
  EXPECT_EQ(placed["racks"], Json::array({"b0-r0001"})) << place;
  std::string estimates = RunCommand(std::string(RACKWISE_CLI) + " place --cluster " + yaml +
                                     " --gpus 8 --json --no-telemetry 2>/dev/null");
  EXPECT_EQ(Json::parse(estimates, nullptr, false)["telemetry"], "off") << estimates;

  // The exporter goes away: Prometheus marks its series stale, the readings stop, estimates count again.
  page_.Stop();
  ASSERT_EQ(prometheus_.WaitForEmpty(kNodeQuery, 30), "");
  ASSERT_EQ(
      Settles([&] { return Metrics().find("rackwise_telemetry_fresh 0") != std::string::npos ? "" : "fresh"; }, 30),
      "");
  m = Metrics();
  EXPECT_NE(m.find("rackwise_telemetry_state{state=\"stale\"} 1"), std::string::npos) << m;
  EXPECT_EQ(m.find("rackwise_rack_measured_watts{rack="), std::string::npos) << m;
  EXPECT_EQ(Settles(
                [&] {
                  return LogText().find("telemetry: stale (0 of 2 racks measured; the others count their estimates)") ==
                                 std::string::npos
                             ? LogText()
                             : "";
                },
                10),
            "");
  EXPECT_EQ(Filter()["NodeNames"].size(), 8u);
  place = RunCommand(std::string(RACKWISE_CLI) + " place --cluster " + yaml + " --gpus 8 --json 2>&1 >/dev/null");
  EXPECT_NE(place.find("rackwise: telemetry: rack b0-r0000 counts its estimate"), std::string::npos) << place;
  place = RunCommand(std::string(RACKWISE_CLI) + " place --cluster " + yaml + " --gpus 8 --json 2>/dev/null");
  EXPECT_EQ(Json::parse(place, nullptr, false)["telemetry"], "stale") << place;
}

TEST_F(PrometheusTelemetryTest, RackAboveItsCapRaisesTheOverdrawAlarmNamingItsPods) {
  ASSERT_EQ(Schedule(MakePod("early", 8), {NodeName(0, 1)}), NodeName(0, 1));
  // 31 kW measured on rack 0: above its 30 kW cap.
  for (int n = 1; n <= 4; ++n) page_.SetGpuWatts(NodeName(0, n), 656.25);
  ASSERT_EQ(
      Settles(
          [&] {
            return Metrics().find("rackwise_rack_overdraw{rack=\"b0-r0000\"} 1") != std::string::npos ? "" : "no alarm";
          },
          30),
      "")
      << LogText();
  EXPECT_NE(LogText().find("OVERDRAW: rack b0-r0000 measures 31.0 kW, above its 30.0 kW cap; jobs on it: pod/ml/early"),
            std::string::npos)
      << LogText();
  Json f = Filter();
  EXPECT_TRUE(f["FailedNodes"].contains(NodeName(0, 2))) << f.dump();
}

}  // namespace
}  // namespace rackwise::k8s::testing
