// The client against a local HTTP server: the query reaches /api/v1/query escaped, Prometheus's error bodies
// come back to the parser, and refused connections, hung servers and oversized answers are clear errors within
// the timeouts.
#include "prometheus_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace rackwise::telemetry {
namespace {

class LocalServer {
 public:
  LocalServer() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LocalServer() {
    server_.stop();
    thread_.join();
  }
  httplib::Server& server() { return server_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(PrometheusClientTest, SendsTheQueryAndReturnsTheBody) {
  LocalServer s;
  std::string seen;
  s.server().Get("/api/v1/query", [&](const httplib::Request& req, httplib::Response& res) {
    seen = req.get_param_value("query");
    res.set_content(R"({"status":"success"})", "application/json");
  });
  PrometheusClient c(s.url());
  absl::StatusOr<std::string> body = c.Query("sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE{gpu=~\"0|1\"})");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, R"({"status":"success"})");
  EXPECT_EQ(seen, "sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE{gpu=~\"0|1\"})");
}

TEST(PrometheusClientTest, BadQueryBodiesReachTheParserServerErrorsDoNot) {
  LocalServer s;
  s.server().Get("/api/v1/query", [&](const httplib::Request& req, httplib::Response& res) {
    res.status = req.get_param_value("query") == "bad" ? 400 : 503;
    res.set_content(R"({"status":"error","error":"parse error"})", "application/json");
  });
  PrometheusClient c(s.url());
  absl::StatusOr<std::string> body = c.Query("bad");
  ASSERT_TRUE(body.ok());
  EXPECT_NE(body->find("parse error"), std::string::npos);
  EXPECT_EQ(c.Query("x").status().code(), absl::StatusCode::kUnavailable);
}

TEST(PrometheusClientTest, RefusedHungAndOversizedAreErrorsWithinTheTimeout) {
  int closed_port = 0;
  {
    LocalServer gone;
    closed_port = std::stoi(gone.url().substr(17));
  }
  PrometheusClient refused("http://127.0.0.1:" + std::to_string(closed_port));
  absl::StatusOr<std::string> r = refused.Query("q");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();

  LocalServer s;
  std::atomic<bool> release{false};
  s.server().Get("/api/v1/query", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.get_param_value("query") == "hang") {
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    res.set_content(std::string(5000, 'x'), "application/json");
  });
  PrometheusClientOptions o;
  o.timeout_ms = 300;
  o.max_answer_bytes = 1000;
  PrometheusClient c(s.url(), o);
  const auto start = std::chrono::steady_clock::now();
  r = c.Query("hang");
  const auto took = std::chrono::steady_clock::now() - start;
  release = true;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_LT(took, std::chrono::seconds(3));
  r = c.Query("big");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
}

}  // namespace
}  // namespace rackwise::telemetry
