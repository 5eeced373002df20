// The HTTP(S) face of the extender: POST <prefix>/filter, /prioritize, /bind, /preempt in the upstream wire
// format, and GET /healthz, /readyz, /metrics. HTTP/1.1 keep-alive (kube-scheduler reuses connections), a body
// size limit (413), read/write timeouts against slow clients, a fixed worker pool. A request that cannot be
// decoded gets 400 with a JSON body naming the problem; nothing a client sends can crash the process or
// change the ledger except a valid bind.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "extender_service.h"

namespace httplib {
class Server;
}

namespace rackwise::k8s {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                        // 0: pick a free port (see port())
  std::string cert_file, key_file;     // both set: HTTPS
  std::string client_ca_file;          // set (with HTTPS): require client certificates signed by it
  size_t max_body_bytes = 64u << 20;   // a full NodeList of 5,000 nodes fits
  int read_timeout_ms = 5'000;         // per read; a client that stalls longer is dropped
  int write_timeout_ms = 5'000;
  // Idle keep-alive connections close after this. Longer than Go's default IdleConnTimeout (90 s), so that
  // kube-scheduler never sends a POST on a connection the server is closing. A worker serves one connection
  // at a time: a client that stalls holds one worker until a read times out plus this idle time.
  int keep_alive_timeout_s = 120;
  size_t keep_alive_max_requests = 100'000;
  int threads = 32;
  // "api-server" or "standalone": what /readyz and the log say about the source of truth.
  std::string mode = "standalone";
  // Monotonic milliseconds passed to the service; tests may replace it.
  std::function<int64_t()> now_ms;
};

class ExtenderHttpServer {
 public:
  ExtenderHttpServer(ExtenderService* service, HttpServerOptions options);
  ~ExtenderHttpServer();

  // Binds and starts serving in a background thread. Errors: the port is taken, the certificate is unreadable.
  absl::Status Start();
  void Stop();
  int port() const { return port_; }
  bool https() const { return !options_.cert_file.empty(); }

 private:
  void Install();

  ExtenderService* service_;
  HttpServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// Monotonic clock in milliseconds (steady_clock), the default for HttpServerOptions::now_ms.
int64_t SteadyNowMs();

}  // namespace rackwise::k8s
