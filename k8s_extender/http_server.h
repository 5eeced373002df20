// The HTTP(S) front end of the extender (Boost.Beast on Asio): reads requests, hands them to ExtenderRoutes
// (http_routes.h), writes the answers. Built so that no client can hold it up:
// - asynchronous: a connection that is idle, slow or pipelining holds no thread, only a socket and a small
//   buffer; one I/O thread per core serves the connections given to it, and binds and large bodies are
//   answered on a worker pool so that they never hold an I/O thread;
// - deadlines: a connection waiting between requests closes after idle_timeout_ms; once a request's first
//   byte arrives, the whole request (headers and body) must arrive within request_timeout_ms, else 408 and
//   close; an answer must be taken within write_timeout_ms;
// - bounded: at most max_connections open (the longest-idle one is shed for a newcomer, see
//   http_admission.h); bodies over max_body_bytes get 413 before they are read; bodies held at once are
//   bounded by body_budget_bytes (later ones wait, holding no thread);
// - clear statuses: 400 with the reason for a malformed request, 408, 413, 431 (headers too large), 503
//   (no connection slot, or the body budget stayed full for the whole deadline).
// HTTP/1.1 keep-alive (kube-scheduler reuses connections); pipelined requests are answered in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "extender_service.h"

namespace rackwise::k8s {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                       // 0: pick a free port (see port())
  std::string cert_file, key_file;    // both set: HTTPS
  std::string client_ca_file;         // set (with HTTPS): require client certificates signed by it
  size_t max_body_bytes = 64u << 20;  // a full NodeList of 5,000 nodes fits
  // Bytes of large (1 MiB or more) request bodies held at once; later ones wait their turn. Decoding a full
  // NodeList costs up to ~7 times its size (nlohmann-json DOM), so 64 MiB keeps the process under 1 GiB
  // however many large bodies arrive at once (tests/integration/k8s/extender_process_test.cc).
  size_t body_budget_bytes = 64u << 20;
  size_t max_header_bytes = 16u << 10;
  int request_timeout_ms = 10'000;  // first byte of a request to its last (kube-scheduler's httpTimeout is 5 s)
  int write_timeout_ms = 10'000;
  // Idle keep-alive connections close after this. Longer than Go's default IdleConnTimeout (90 s), so that
  // kube-scheduler never sends a POST on a connection the server is closing.
  int idle_timeout_ms = 120'000;
  size_t max_connections = 512;
  // I/O threads, each with its own connections (requests are decoded and answered there); 0: one per core.
  int threads = 0;
  // Worker threads for requests that would hold an I/O thread, and with it that thread's other connections:
  // binds (they wait on the API server; ExtenderRoutes::MayBlock) and bodies of 1 MiB or more (milliseconds of
  // decoding). At most this many are answered at once. 0: answered on the I/O threads.
  int blocking_threads = 4;
  // False: only GET /healthz, /readyz and /metrics (the plain --metrics-listen port for probes and
  // Prometheus, which carry no client certificate).
  bool serve_verbs = true;
  // "api-server" or "standalone": what /readyz and the log say about the source of truth.
  std::string mode = "standalone";
  // Monotonic milliseconds passed to the service; tests may replace it.
  std::function<int64_t()> now_ms;
  // Set: one line per filter and bind decision (`--log-level debug`; see ExtenderRoutes::set_decision_log).
  std::function<void(const std::string&)> decision_log;
};

// Counts of the front end's own refusals, for tests and /metrics.
struct HttpServerStats {
  size_t open_connections = 0;
  size_t idle_connections = 0;  // waiting between requests
  uint64_t shed_connections = 0;
  uint64_t refused_connections = 0;
  size_t body_bytes_in_use = 0;
};

class ExtenderHttpServer {
 public:
  ExtenderHttpServer(ExtenderService* service, HttpServerOptions options);
  ~ExtenderHttpServer();

  // Binds and starts serving on background threads. Errors: the port is taken, the certificate is unreadable.
  absl::Status Start();
  // Stops accepting and closes every connection. Safe twice.
  void Stop();
  int port() const { return port_; }
  bool https() const { return !options_.cert_file.empty(); }
  HttpServerStats stats() const;

 private:
  class Impl;
  ExtenderService* service_;
  HttpServerOptions options_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// Monotonic clock in milliseconds (steady_clock), the default for HttpServerOptions::now_ms.
int64_t SteadyNowMs();

}  // namespace rackwise::k8s
