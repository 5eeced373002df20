// The one HTTP client rackwise uses (Kubernetes API, etcd's JSON gateway, Prometheus, steered limits), over
// libcurl: libcurl never raises SIGPIPE or SIGALRM in its caller (the Slurm plugin's threads run inside slurmctld),
// reuses a kept-alive connection, and reads TLS material from files or from memory (kubeconfig data).
//
// An HttpClient sends one request at a time (calls are serialized); make one per concurrent stream.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rackwise::http {

// How the client checks the server and proves who it is. With neither CA given, the system's CAs.
struct ClientTls {
  std::string ca_file;              // trust this CA alone (PEM file) ...
  std::string ca_pem;               // ... or these PEM certificates (a kubeconfig's certificate-authority-data)
  std::string cert_file, key_file;  // a client certificate and its key (PEM files) ...
  std::string cert_pem, key_pem;    // ... or in memory
  bool verify_server = true;        // false only where the administrator said so (insecure-skip-tls-verify)
};

struct ClientOptions {
  ClientTls tls;
  std::chrono::milliseconds connect_timeout{5000};
  // No byte received for this long ends the request (DeadlineExceeded): a dead server is found out even on a
  // long-lived stream.
  std::chrono::milliseconds idle_timeout{30000};
  // The whole request, answer included, within this (DeadlineExceeded); zero: no bound beyond idle_timeout.
  std::chrono::milliseconds total_timeout{0};
  // A gathered answer larger than this is refused (ResourceExhausted): a hostile server cannot fill memory.
  size_t max_body_bytes = size_t{64} << 20;
  // When set and true, requests in progress end with Cancelled within about a second, and new ones are refused.
  const std::atomic<bool>* cancel = nullptr;
};

struct HttpRequest {
  enum class Method { kGet, kPost };
  Method method = Method::kGet;
  std::string url;                   // absolute: http(s)://HOST:PORT/PATH?QUERY
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // POST only
};

struct HttpAnswer {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  explicit HttpClient(ClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends the request and gathers the answer, whatever its status. Errors: the server could not be reached or
  // broke off (Unavailable), a timeout (DeadlineExceeded), cancel (Cancelled), too large (ResourceExhausted).
  absl::StatusOr<HttpAnswer> Send(const HttpRequest& request);

  // Sends the request and hands a 200 answer's body to on_chunk as it arrives (on_chunk returning false ends the
  // request with Cancelled); another status's body is gathered into the answer (up to max_body_bytes). *status
  // is the status line's code (0 when none came), set also when the request fails after it, so a caller can tell
  // a stream that ended early from one that never started.
  absl::StatusOr<HttpAnswer> Stream(const HttpRequest& request, const std::function<bool(absl::string_view)>& on_chunk,
                                    int* status);

 private:
  struct Transfer;
  absl::StatusOr<HttpAnswer> Perform(const HttpRequest& request, Transfer& transfer);

  ClientOptions options_;
  std::mutex mu_;
  void* curl_ = nullptr;  // CURL*, kept between requests for its connection
};

// Percent-encodes a query value or a path segment (RFC 3986 unreserved characters pass).
std::string UrlEncode(absl::string_view value);

}  // namespace rackwise::http
