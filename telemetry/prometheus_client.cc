// libcurl under PrometheusClient. See prometheus_client.h.
#include "prometheus_client.h"

#include <curl/curl.h>

#include <mutex>

#include "absl/strings/str_cat.h"

namespace rackwise::telemetry {
namespace {

// curl_global_init is not thread-safe; do it once, before any handle exists.
void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Sink {
  std::string body;
  size_t limit = 0;
  bool too_large = false;
};

size_t Write(char* data, size_t size, size_t count, void* user) {
  Sink* sink = static_cast<Sink*>(user);
  const size_t n = size * count;
  if (sink->body.size() + n > sink->limit) {
    sink->too_large = true;
    return 0;  // makes curl stop with CURLE_WRITE_ERROR
  }
  sink->body.append(data, n);
  return n;
}

}  // namespace

struct PrometheusClient::Handle {
  CURL* curl = nullptr;
  ~Handle() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
};

PrometheusClient::PrometheusClient(std::string base_url, PrometheusClientOptions options)
    : base_url_(std::move(base_url)), options_(options), handle_(std::make_unique<Handle>()) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  GlobalInitOnce();
}

PrometheusClient::~PrometheusClient() = default;

absl::StatusOr<std::string> PrometheusClient::Query(const std::string& promql) {
  if (handle_->curl == nullptr) handle_->curl = curl_easy_init();
  CURL* c = handle_->curl;
  if (c == nullptr) return absl::InternalError("prometheus: curl_easy_init failed");
  curl_easy_reset(c);
  char* escaped = curl_easy_escape(c, promql.data(), static_cast<int>(promql.size()));
  if (escaped == nullptr) return absl::InternalError("prometheus: cannot escape the query");
  const std::string url = absl::StrCat(base_url_, "/api/v1/query?query=", escaped);
  curl_free(escaped);
  Sink sink;
  sink.limit = options_.max_answer_bytes;
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, options_.connect_timeout_ms);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, options_.timeout_ms);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  const CURLcode rc = curl_easy_perform(c);
  if (sink.too_large)
    return absl::ResourceExhaustedError(
        absl::StrCat("prometheus: answer from ", base_url_, " is larger than ", options_.max_answer_bytes, " bytes"));
  if (rc != CURLE_OK)
    return absl::UnavailableError(
        absl::StrCat("prometheus: ", base_url_, ": ", error[0] != 0 ? error : curl_easy_strerror(rc)));
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  // Prometheus answers 400 (bad query) and 422 (cannot execute) with a JSON body whose "error" the parser
  // reports; 5xx means the server is in trouble.
  if (code >= 500) return absl::UnavailableError(absl::StrCat("prometheus: ", base_url_, " answered HTTP ", code));
  if (code != 200 && code != 400 && code != 422)
    return absl::InvalidArgumentError(absl::StrCat("prometheus: ", base_url_, " answered HTTP ", code));
  return std::move(sink.body);
}

}  // namespace rackwise::telemetry
