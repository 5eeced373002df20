// See ledger_metrics_server.h.
#include "ledger_metrics_server.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "daemon_support.h"
#include "prometheus_text.h"

namespace rackwise::ledger {

std::string LedgerMetricsText(const LedgerAudit& audit, const SharedLedger& ledger, bool insecure) {
  std::string out = audit.MetricsText();
  daemon::Gauge(&out, "rackwise_ledger_serving", "1 while this replica leads and serves, else 0.");
  absl::StrAppend(&out, "rackwise_ledger_serving ", ledger.serving() ? 1 : 0, "\n");
  daemon::Gauge(&out, "rackwise_ledger_allocations", "Allocations this replica holds.");
  absl::StrAppend(&out, "rackwise_ledger_allocations ", ledger.allocation_count(), "\n");
  daemon::Gauge(&out, "rackwise_ledger_insecure_loopback",
                "1 when started with --insecure-loopback: callers without credentials write anything.");
  absl::StrAppend(&out, "rackwise_ledger_insecure_loopback ", insecure ? 1 : 0, "\n");
  return out;
}

MetricsServer::MetricsServer(std::function<std::string()> text)
    : text_(std::move(text)), server_(std::make_unique<httplib::Server>()) {}

MetricsServer::~MetricsServer() { Stop(); }

absl::Status MetricsServer::Start(const std::string& address) {
  std::string host;
  int port = 0;
  if (!daemon::SplitHostPort(address, &host, &port))
    return absl::InvalidArgumentError(absl::StrCat("--metrics-listen '", address, "': not HOST:PORT"));
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(text_(), "text/plain; version=0.0.4");
  });
  port_ = port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (port_ <= 0) return absl::UnavailableError(absl::StrCat("--metrics-listen: cannot listen on ", address));
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return absl::OkStatus();
}

void MetricsServer::Stop() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace rackwise::ledger
