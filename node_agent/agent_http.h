// GET /metrics (AgentMetrics) and GET /healthz for rackwise-node-agent. /healthz answers 200 while the
// reconcile loop keeps finishing rounds (whether or not its sources answered: an unreachable kubelet is
// shown in the metrics, not cured by a restart), 503 once no round has ended for `stall_ms`.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "agent_metrics.h"

namespace httplib {
class Server;
}

namespace rackwise::node_agent {

class AgentHttpServer {
 public:
  // `host`:`port` (0: a free port, see port()).
  AgentHttpServer(AgentMetrics* metrics, std::string host, int port, int64_t stall_ms);
  ~AgentHttpServer();

  absl::Status Start();
  void Stop();
  int port() const { return port_; }
  // Called by the loop at the end of every round.
  void RoundEnded();

 private:
  AgentMetrics* metrics_;
  std::string host_;
  int port_;
  int64_t stall_ms_;
  std::atomic<int64_t> last_round_ms_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace rackwise::node_agent
