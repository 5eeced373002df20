// A minimal Kubernetes API client for what the extender and the node agent need: paginated LIST, a streaming WATCH
// (chunked, one JSON event per line), and POST of a pod's binding subresource. Plain HTTP is allowed for tests against
// a local replay server; real clusters use HTTPS with a CA and a bearer token or client certificate.
// Thread-safe: every LIST and WATCH opens its own connection, binds and evictions share one kept alive; Stop()
// ends watches in progress (within about a second) and refuses new calls. HTTP is http_client/'s.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "http_client.h"
#include "json_fields.h"
#include "kube_config.h"
#include "pod_binder.h"

namespace rackwise::k8s {

struct ListPage {
  std::vector<Json> items;
  std::string resource_version;
  std::string continue_token;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  Json object;
};

// Error codes: a 410 Gone (from the HTTP status or an ERROR watch event) is OutOfRange, so that callers relist;
// 401/403 are PermissionDenied; other HTTP errors Unavailable (retry with backoff); bad JSON InvalidArgument.
bool IsGone(const absl::Status& status);

class KubeClient : public PodBinder {
 public:
  static absl::StatusOr<std::unique_ptr<KubeClient>> Create(KubeConfig config);
  ~KubeClient() override;

  // GET path?limit=..&continue=..&fieldSelector=.. : one page.
  absl::StatusOr<ListPage> List(const std::string& path, const std::string& field_selector, int limit,
                                const std::string& continue_token);
  // GET path?watch=1&resourceVersion=rv&allowWatchBookmarks=true&timeoutSeconds=t. Calls on_event per event
  // until the server ends the stream (OK), on_event returns false (Cancelled), Stop() (Cancelled), or an error.
  absl::Status Watch(const std::string& path, const std::string& field_selector, const std::string& resource_version,
                     int timeout_seconds, const std::function<bool(const WatchEvent&)>& on_event);
  // POST /api/v1/namespaces/{ns}/pods/{name}/binding.
  absl::Status BindPod(const BindingArgs& binding) override;
  // POST /api/v1/namespaces/{ns}/pods/{name}/eviction (policy/v1 Eviction). A PodDisruptionBudget that forbids
  // it answers 429, which comes back as ResourceExhausted with the API server's message.
  absl::Status EvictPod(const std::string& pod_namespace, const std::string& pod_name) override;

  // Aborts watches in progress and refuses new calls.
  void Stop();
  const KubeConfig& config() const { return config_; }

 private:
  explicit KubeClient(KubeConfig config);
  // POST path/{subresource} of a pod (binding, eviction) on the kept-alive connection.
  absl::Status PostPodSubresource(const std::string& pod_namespace, const std::string& pod_name,
                                  const char* subresource, const Json& body);
  // A client whose request ends when no byte comes for `idle`; each WATCH has its own.
  std::unique_ptr<http::HttpClient> OpenClient(std::chrono::seconds idle) const;
  // scheme://host:port plus the server's path prefix and `path`.
  std::string Url(absl::string_view path) const;
  // Accept: JSON, and the bearer token as it is now (a rotated token file is re-read).
  std::vector<std::string> Headers() const;

  KubeConfig config_;
  std::atomic<bool> stopped_{false};
  // LIST pages (a relist's pages, and every informer's lists, one at a time) and POSTs each on a kept-alive
  // connection: no TLS handshake per page or per bind.
  std::unique_ptr<http::HttpClient> list_client_;
  std::unique_ptr<http::HttpClient> post_client_;
};

}  // namespace rackwise::k8s
