// A small client for Prometheus's HTTP API instant query (`GET <url>/api/v1/query?query=...`), over the
// project's HTTP client (http_client/), with a connect timeout and a total timeout so that a hung server cannot
// stall a face, and a cap on the answer's size. Thread-compatible: one client per thread (it keeps one connection alive
// between queries).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace rackwise::http {
class HttpClient;
}

namespace rackwise::telemetry {

struct PrometheusClientOptions {
  long connect_timeout_ms = 1000;
  long timeout_ms = 3000;              // the whole request, answer included
  size_t max_answer_bytes = 16 << 20;  // far above any cluster's per-node answer
};

class PrometheusClient {
 public:
  // `base_url` is the server's root, e.g. http://prometheus.monitoring:9090 (a trailing slash is fine).
  explicit PrometheusClient(std::string base_url, PrometheusClientOptions options = {});
  ~PrometheusClient();
  PrometheusClient(const PrometheusClient&) = delete;
  PrometheusClient& operator=(const PrometheusClient&) = delete;

  // The answer's body. Errors: Unavailable (connection refused, timeout, DNS, HTTP 5xx), InvalidArgument (HTTP
  // 4xx: a bad query, with Prometheus's own error text), ResourceExhausted (answer too large).
  absl::StatusOr<std::string> Query(const std::string& promql);

 private:
  std::string base_url_;
  std::unique_ptr<http::HttpClient> client_;
};

}  // namespace rackwise::telemetry
