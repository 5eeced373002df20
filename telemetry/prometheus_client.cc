// PrometheusClient over the project's HTTP client. See prometheus_client.h.
#include "prometheus_client.h"

#include "absl/strings/str_cat.h"
#include "http_client.h"

namespace rackwise::telemetry {

PrometheusClient::PrometheusClient(std::string base_url, PrometheusClientOptions options)
    : base_url_(std::move(base_url)),
      client_(std::make_unique<http::HttpClient>(
          http::ClientOptions{.connect_timeout = std::chrono::milliseconds(options.connect_timeout_ms),
                              .idle_timeout = std::chrono::milliseconds(options.timeout_ms),
                              .total_timeout = std::chrono::milliseconds(options.timeout_ms),
                              .max_body_bytes = options.max_answer_bytes})) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
}

PrometheusClient::~PrometheusClient() = default;

absl::StatusOr<std::string> PrometheusClient::Query(const std::string& promql) {
  absl::StatusOr<http::HttpAnswer> answer =
      client_->Send({.url = absl::StrCat(base_url_, "/api/v1/query?query=", http::UrlEncode(promql))});
  if (!answer.ok()) {
    if (answer.status().code() == absl::StatusCode::kResourceExhausted)
      return absl::ResourceExhaustedError(absl::StrCat("prometheus: ", answer.status().message()));
    // Refused, timed out, broken off: the server is not there for now, which the poller retries.
    return absl::UnavailableError(absl::StrCat("prometheus: ", answer.status().message()));
  }
  const int code = answer->status;
  // Prometheus answers 400 (bad query) and 422 (cannot execute) with a JSON body whose "error" the parser
  // reports; 5xx means the server is in trouble.
  if (code >= 500) return absl::UnavailableError(absl::StrCat("prometheus: ", base_url_, " answered HTTP ", code));
  if (code != 200 && code != 400 && code != 422)
    return absl::InvalidArgumentError(absl::StrCat("prometheus: ", base_url_, " answered HTTP ", code));
  return std::move(answer->body);
}

}  // namespace rackwise::telemetry
