// Kubernetes LIST/WATCH/binding over the project's HTTP client (see kube_client.h).
#include "kube_client.h"

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {
namespace {

using http::UrlEncode;

absl::Status HttpError(int status, absl::string_view body, absl::string_view what) {
  std::string msg = absl::StrCat(what, ": HTTP ", status);
  if (absl::StatusOr<Json> j = ParseJsonObject(body); j.ok()) {
    if (std::string m = StringField(*j, "message"); !m.empty()) absl::StrAppend(&msg, ": ", m);
  }
  if (status == 410) return absl::OutOfRangeError(absl::StrCat(msg, " (resourceVersion too old)"));
  if (status == 401 || status == 403) return absl::PermissionDeniedError(msg);
  if (status == 404) return absl::NotFoundError(msg);
  if (status == 409) return absl::AlreadyExistsError(msg);
  if (status == 429) return absl::ResourceExhaustedError(msg);  // an eviction a PodDisruptionBudget forbids now
  return absl::UnavailableError(msg);
}

// How many PEM certificates `pem` holds (0 for none or garbage).
int CountCertificates(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return 0;
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    ++count;
    X509_free(cert);
  }
  BIO_free(bio);
  return count;
}

bool IsPrivateKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return false;
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) return false;
  EVP_PKEY_free(key);
  return true;
}

// The TLS material of a kubeconfig, read before the first request so that a bad file is named at start-up.
absl::Status CheckTls(const KubeConfig& config) {
  if (!config.https) return absl::OkStatus();
  if (!config.client_cert_pem.empty() &&
      (CountCertificates(config.client_cert_pem) == 0 || !IsPrivateKey(config.client_key_pem)))
    return absl::InvalidArgumentError(absl::StrCat(config.source, ": cannot read the client certificate or key"));
  if (!config.ca_pem.empty() && CountCertificates(config.ca_pem) == 0)
    return absl::InvalidArgumentError(absl::StrCat(config.source, ": no CA certificate found"));
  return absl::OkStatus();
}

}  // namespace

bool IsGone(const absl::Status& status) { return status.code() == absl::StatusCode::kOutOfRange; }

absl::StatusOr<std::unique_ptr<KubeClient>> KubeClient::Create(KubeConfig config) {
  if (absl::Status tls = CheckTls(config); !tls.ok()) return tls;
  return std::unique_ptr<KubeClient>(new KubeClient(std::move(config)));
}

KubeClient::KubeClient(KubeConfig config)
    : config_(std::move(config)),
      list_client_(OpenClient(std::chrono::seconds(60))),
      post_client_(OpenClient(std::chrono::seconds(30))) {}

KubeClient::~KubeClient() { Stop(); }

std::unique_ptr<http::HttpClient> KubeClient::OpenClient(std::chrono::seconds idle) const {
  http::ClientOptions options{.tls = {.ca_pem = config_.ca_pem,
                                      .cert_pem = config_.client_cert_pem,
                                      .key_pem = config_.client_key_pem,
                                      .verify_server = !config_.insecure_skip_verify},
                              .connect_timeout = std::chrono::seconds(5),
                              .idle_timeout = idle,
                              .cancel = &stopped_};
  return std::make_unique<http::HttpClient>(std::move(options));
}

std::string KubeClient::Url(absl::string_view path) const {
  const bool ipv6 = config_.host.find(':') != std::string::npos;
  return absl::StrCat(config_.https ? "https://" : "http://", ipv6 ? "[" : "", config_.host, ipv6 ? "]" : "", ":",
                      config_.port, config_.base_path, path);
}

std::vector<std::string> KubeClient::Headers() const {
  std::vector<std::string> headers = {"Accept: application/json"};
  if (std::string token = config_.CurrentToken(); !token.empty())
    headers.push_back(absl::StrCat("Authorization: Bearer ", token));
  return headers;
}

absl::StatusOr<ListPage> KubeClient::List(const std::string& path, const std::string& field_selector, int limit,
                                          const std::string& continue_token) {
  std::string url = absl::StrCat(Url(path), "?limit=", limit);
  if (!field_selector.empty()) absl::StrAppend(&url, "&fieldSelector=", UrlEncode(field_selector));
  if (!continue_token.empty()) absl::StrAppend(&url, "&continue=", UrlEncode(continue_token));
  absl::StatusOr<http::HttpAnswer> answer = list_client_->Send({.url = url, .headers = Headers()});
  if (!answer.ok()) return absl::Status(answer.status().code(), absl::StrCat("LIST ", answer.status().message()));
  if (answer->status != 200) return HttpError(answer->status, answer->body, absl::StrCat("LIST ", path));
  absl::StatusOr<Json> body = ParseJsonObject(answer->body);
  if (!body.ok()) return absl::InvalidArgumentError(absl::StrCat("LIST ", path, ": ", body.status().message()));
  ListPage page;
  if (const Json* meta = FindField(*body, "metadata")) {
    page.resource_version = StringField(*meta, "resourceVersion");
    page.continue_token = StringField(*meta, "continue");
  }
  if (const Json* items = FindField(*body, "items")) {
    if (!items->is_array()) return absl::InvalidArgumentError(absl::StrCat("LIST ", path, ": items is not an array"));
    page.items.assign(items->begin(), items->end());
  }
  return page;
}

namespace {

// Splits a watch stream into events, one JSON object a line, and hands each to the caller's handler.
class WatchLineReader {
 public:
  WatchLineReader(const std::string& path, const std::function<bool(const WatchEvent&)>& on_event)
      : path_(path), on_event_(on_event) {}

  // False ends the stream; status() then says why.
  bool Read(absl::string_view data) {
    buffer_.append(data.data(), data.size());
    size_t start = 0, nl;
    while ((nl = buffer_.find('\n', start)) != std::string::npos) {
      absl::string_view line(buffer_.data() + start, nl - start);
      start = nl + 1;
      if (line.find_first_not_of(" \r\t") == absl::string_view::npos) continue;
      if (!Event(line)) return false;
    }
    buffer_.erase(0, start);
    constexpr size_t kMaxLine = size_t{64} << 20;
    if (buffer_.size() > kMaxLine) {
      status_ = absl::InvalidArgumentError(absl::StrCat("WATCH ", path_, ": event larger than 64 MiB"));
      return false;
    }
    return true;
  }
  const absl::Status& status() const { return status_; }

 private:
  bool Event(absl::string_view line) {
    absl::StatusOr<Json> j = ParseJsonObject(line);
    if (!j.ok()) {
      status_ = absl::InvalidArgumentError(absl::StrCat("WATCH ", path_, ": ", j.status().message()));
      return false;
    }
    WatchEvent ev;
    ev.type = StringField(*j, "type");
    if (const Json* o = FindField(*j, "object")) ev.object = *o;
    if (ev.type == "ERROR") {
      int code = 0;
      if (const Json* c = FindField(ev.object, "code"); c && c->is_number_integer()) code = c->get<int>();
      status_ = HttpError(code, ev.object.dump(), absl::StrCat("WATCH ", path_));
      return false;
    }
    if (!on_event_(ev)) {
      status_ = absl::CancelledError("watch cancelled by its handler");
      return false;
    }
    return true;
  }

  const std::string& path_;
  const std::function<bool(const WatchEvent&)>& on_event_;
  std::string buffer_;
  absl::Status status_;
};

}  // namespace

absl::Status KubeClient::Watch(const std::string& path, const std::string& field_selector,
                               const std::string& resource_version, int timeout_seconds,
                               const std::function<bool(const WatchEvent&)>& on_event) {
  std::string url = absl::StrCat(Url(path), "?watch=1&allowWatchBookmarks=true&timeoutSeconds=", timeout_seconds,
                                 "&resourceVersion=", UrlEncode(resource_version));
  if (!field_selector.empty()) absl::StrAppend(&url, "&fieldSelector=", UrlEncode(field_selector));
  WatchLineReader reader(path, on_event);
  int http_status = 0;
  absl::StatusOr<http::HttpAnswer> answer =
      OpenClient(std::chrono::seconds(timeout_seconds + 30))
          ->Stream(
              {.url = url, .headers = Headers()}, [&](absl::string_view data) { return reader.Read(data); },
              &http_status);
  if (!reader.status().ok()) return reader.status();
  if (stopped_) return absl::CancelledError("stopped");
  if (answer.ok()) {
    if (answer->status != 200) return HttpError(answer->status, answer->body, absl::StrCat("WATCH ", path));
    return absl::OkStatus();
  }
  // A timeout or a reset after the stream started is an ordinary end: resume from the last version.
  if (http_status == 200) return absl::OkStatus();
  return absl::Status(answer.status().code(), absl::StrCat("WATCH ", answer.status().message()));
}

absl::Status KubeClient::BindPod(const BindingArgs& b) {
  Json body = {{"apiVersion", "v1"},
               {"kind", "Binding"},
               {"metadata", {{"name", b.pod_name}, {"namespace", b.pod_namespace}}},
               {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", b.node}}}};
  if (!b.pod_uid.empty()) body["metadata"]["uid"] = b.pod_uid;
  return PostPodSubresource(b.pod_namespace, b.pod_name, "binding", body);
}

absl::Status KubeClient::EvictPod(const std::string& pod_namespace, const std::string& pod_name) {
  Json body = {{"apiVersion", "policy/v1"},
               {"kind", "Eviction"},
               {"metadata", {{"name", pod_name}, {"namespace", pod_namespace}}}};
  return PostPodSubresource(pod_namespace, pod_name, "eviction", body);
}

absl::Status KubeClient::PostPodSubresource(const std::string& pod_namespace, const std::string& pod_name,
                                            const char* subresource, const Json& body) {
  const std::string path =
      absl::StrCat("/api/v1/namespaces/", UrlEncode(pod_namespace), "/pods/", UrlEncode(pod_name), "/", subresource);
  std::vector<std::string> headers = Headers();
  headers.push_back("Content-Type: application/json");
  absl::StatusOr<http::HttpAnswer> answer = post_client_->Send({.method = http::HttpRequest::Method::kPost,
                                                                .url = Url(path),
                                                                .headers = std::move(headers),
                                                                .body = body.dump()});
  if (!answer.ok()) return absl::Status(answer.status().code(), absl::StrCat("POST ", answer.status().message()));
  if (answer->status == 200 || answer->status == 201) return absl::OkStatus();
  return HttpError(answer->status, answer->body, absl::StrCat("POST ", path));
}

void KubeClient::Stop() { stopped_ = true; }

}  // namespace rackwise::k8s
