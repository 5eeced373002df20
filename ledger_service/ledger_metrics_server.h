// The ledger's /metrics (--metrics-listen): the audit counts (ledger_audit.h) and gauges of the replica's state,
// in the Prometheus text format, over plain HTTP on a port of its own (Prometheus and probes carry no client
// certificate; the counts name identities and owners' verbs, not tokens or owners).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "ledger_audit.h"
#include "shared_ledger.h"

namespace httplib {
class Server;
}

namespace rackwise::ledger {

// The whole /metrics page: `audit`'s counts, and rackwise_ledger_serving, rackwise_ledger_allocations and
// rackwise_ledger_insecure_loopback.
std::string LedgerMetricsText(const LedgerAudit& audit, const SharedLedger& ledger, bool insecure);

class MetricsServer {
 public:
  explicit MetricsServer(std::function<std::string()> text);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds HOST:PORT (port 0: any free port, see port()) and serves GET /metrics on a thread of its own.
  absl::Status Start(const std::string& address);
  void Stop();
  int port() const { return port_; }

 private:
  std::function<std::string()> text_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace rackwise::ledger
