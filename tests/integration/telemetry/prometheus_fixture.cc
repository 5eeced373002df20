// See prometheus_fixture.h.
#include "prometheus_fixture.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "rackwise/testing/child_process.h"

extern char** environ;

namespace rackwise::testing {

void DcgmExporterPage::Start() {
  server_ = std::make_unique<httplib::Server>();
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void DcgmExporterPage::Stop() {
  if (!server_) return;
  server_->stop();
  thread_.join();
  server_.reset();
}

void DcgmExporterPage::SetGpuWatts(const std::string& node, double watts) {
  std::lock_guard<std::mutex> lock(mu_);
  watts_[node] = watts;
}

std::string DcgmExporterPage::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream out;
  out << "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n";
  int serial = 0;
  for (const auto& [node, watts] : watts_) {
    for (int g = 0; g < gpus_; ++g, ++serial) {
      char uuid[64];
      std::snprintf(uuid, sizeof uuid, "GPU-5fd4a0b4-%04x-4c1e-9d2a-%012x", serial, serial * 7919);
      char value[32];
      std::snprintf(value, sizeof value, "%.6f", watts);
      out << "DCGM_FI_DEV_POWER_USAGE{gpu=\"" << g << "\",UUID=\"" << uuid << "\",device=\"nvidia" << g
          << "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"" << node
          << "\",DCGM_FI_DRIVER_VERSION=\"535.104.12\"} " << value << "\n";
    }
  }
  return out.str();
}

std::string PrometheusServer::Start(int target_port) {
  char tmpl[] = "/tmp/rackwise-prometheus-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return "mkdtemp failed";
  dir_ = tmpl;
  port_ = FreeLoopbackPort();
  {
    std::ofstream config(dir_ + "/prometheus.yml");
    config << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
           << "scrape_configs:\n  - job_name: dcgm\n    static_configs:\n      - targets: ['127.0.0.1:" << target_port
           << "']\n";
  }
  const std::vector<std::string> args = {
      "prometheus",
      "--config.file=" + dir_ + "/prometheus.yml",
      "--storage.tsdb.path=" + dir_ + "/data",
      "--web.listen-address=127.0.0.1:" + std::to_string(port_),
      "--log.level=warn",
  };
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = dir_ + "/log";
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const int rc = posix_spawnp(&pid_, "prometheus", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    return "cannot start prometheus (is the Debian package installed? scripts/install-deps.sh)";
  }
  // Ready: the HTTP API answers.
  httplib::Client c("127.0.0.1", port_);
  c.set_connection_timeout(1, 0);
  const std::string why = WaitFor(
      "prometheus to be ready",
      [&] {
        auto res = c.Get("/-/ready");
        return res && res->status == 200;
      },
      std::chrono::seconds(60), [this] { return Died(); });
  return why.empty() ? "" : why + "\n" + Log();
}

void PrometheusServer::Stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

std::string PrometheusServer::Log() const {
  std::ifstream in(dir_ + "/log");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string PrometheusServer::Died() const {
  if (pid_ <= 0) return "prometheus is not running";
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == 0) return "";
  return "prometheus exited (status " + std::to_string(status) + "):\n" + Log();
}

namespace {

std::chrono::milliseconds Seconds(double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); }

// The first value of an instant query, or nullopt for an empty vector; *answer gets the body.
std::optional<double> FirstValue(int port, const std::string& promql, std::string* answer) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(2, 0);
  auto res = c.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!res) {
    *answer = "(no answer)";
    return std::nullopt;
  }
  *answer = res->body;
  nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success") return std::nullopt;
  const auto& result = j["data"]["result"];
  if (!result.is_array() || result.empty()) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

}  // namespace

std::string PrometheusServer::WaitForQuery(const std::string& promql, const std::function<bool(double)>& want,
                                           double timeout_s) {
  std::string answer;
  const std::string why = WaitFor(
      promql,
      [&] {
        std::optional<double> v = FirstValue(port_, promql, &answer);
        return v && want(*v);
      },
      Seconds(timeout_s), [this] { return Died(); });
  return why.empty() ? "" : why + "; last answer: " + answer;
}

std::string PrometheusServer::WaitForEmpty(const std::string& promql, double timeout_s) {
  std::string answer;
  const std::string why = WaitFor(
      promql + " to be empty",
      [&] { return !FirstValue(port_, promql, &answer) && answer.find("\"result\":[]") != std::string::npos; },
      Seconds(timeout_s), [this] { return Died(); });
  return why.empty() ? "" : why + "; last answer: " + answer;
}

}  // namespace rackwise::testing
