#include "agent_http.h"

#include <chrono>

#include <httplib.h>

#include "absl/strings/str_cat.h"

namespace rackwise::node_agent {
namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

AgentHttpServer::AgentHttpServer(AgentMetrics* metrics, std::string host, int port, int64_t stall_ms)
    : metrics_(metrics), host_(std::move(host)), port_(port), stall_ms_(stall_ms), last_round_ms_(SteadyMs()) {}

AgentHttpServer::~AgentHttpServer() { Stop(); }

void AgentHttpServer::RoundEnded() { last_round_ms_ = SteadyMs(); }

absl::Status AgentHttpServer::Start() {
  server_ = std::make_unique<httplib::Server>();
  server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_->Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    int64_t idle = SteadyMs() - last_round_ms_.load();
    if (idle > stall_ms_) {
      res.status = 503;
      res.set_content(absl::StrCat("no reconcile round has ended for ", idle / 1000, " s\n"), "text/plain");
      return;
    }
    res.set_content("ok\n", "text/plain");
  });
  int bound = port_ == 0 ? server_->bind_to_any_port(host_) : (server_->bind_to_port(host_, port_) ? port_ : -1);
  if (bound < 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", host_, ":", port_));
  port_ = bound;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return absl::OkStatus();
}

void AgentHttpServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace rackwise::node_agent
