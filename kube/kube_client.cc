// Kubernetes LIST/WATCH/binding over cpp-httplib (see kube_client.h).
#include "kube_client.h"

#include <openssl/pem.h>
#include <openssl/x509.h>

#include <httplib.h>

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {
namespace {

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

X509_STORE* StoreFromPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return nullptr;
  X509_STORE* store = X509_STORE_new();
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store, cert) == 1) ++added;
    X509_free(cert);
  }
  BIO_free(bio);
  if (added == 0) {
    X509_STORE_free(store);
    return nullptr;
  }
  return store;
}

}  // namespace

bool IsGone(const absl::Status& status) { return status.code() == absl::StatusCode::kOutOfRange; }

std::string UrlEncode(absl::string_view value) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<KubeClient>> KubeClient::Create(KubeConfig config) {
  auto client = std::unique_ptr<KubeClient>(new KubeClient(std::move(config)));
  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> probe = client->Connect(30);
  if (!probe.ok()) return probe.status();
  client->bind_client_ = std::move(*probe);
  return client;
}

KubeClient::~KubeClient() { Stop(); }

absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> KubeClient::Connect(int read_timeout_s) const {
  std::unique_ptr<httplib::ClientImpl> cli;
  if (config_.https) {
    std::unique_ptr<httplib::SSLClient> ssl;
    if (!config_.client_cert_pem.empty()) {
      BIO* cb = BIO_new_mem_buf(config_.client_cert_pem.data(), static_cast<int>(config_.client_cert_pem.size()));
      BIO* kb = BIO_new_mem_buf(config_.client_key_pem.data(), static_cast<int>(config_.client_key_pem.size()));
      X509* cert = cb ? PEM_read_bio_X509(cb, nullptr, nullptr, nullptr) : nullptr;
      EVP_PKEY* key = kb ? PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr) : nullptr;
      if (cb) BIO_free(cb);
      if (kb) BIO_free(kb);
      if (cert == nullptr || key == nullptr) {
        if (cert) X509_free(cert);
        if (key) EVP_PKEY_free(key);
        return absl::InvalidArgumentError(absl::StrCat(config_.source, ": cannot read the client certificate or key"));
      }
      ssl = std::make_unique<httplib::SSLClient>(config_.host, config_.port, cert, key);
      X509_free(cert);
      EVP_PKEY_free(key);
    } else {
      ssl = std::make_unique<httplib::SSLClient>(config_.host, config_.port);
    }
    if (!ssl->is_valid()) return absl::InternalError("cannot set up TLS");
    if (!config_.ca_pem.empty()) {
      X509_STORE* store = StoreFromPem(config_.ca_pem);
      if (store == nullptr)
        return absl::InvalidArgumentError(absl::StrCat(config_.source, ": no CA certificate found"));
      ssl->set_ca_cert_store(store);  // owned by the client's SSL_CTX from here on
    }
    ssl->enable_server_certificate_verification(!config_.insecure_skip_verify);
    cli = std::move(ssl);
  } else {
    cli = std::make_unique<httplib::ClientImpl>(config_.host, config_.port);
  }
  cli->set_connection_timeout(5, 0);
  cli->set_read_timeout(read_timeout_s, 0);
  cli->set_write_timeout(10, 0);
  cli->set_keep_alive(true);
  if (std::string token = config_.CurrentToken(); !token.empty()) cli->set_bearer_token_auth(token);
  return cli;
}

absl::StatusOr<ListPage> KubeClient::List(const std::string& path, const std::string& field_selector, int limit,
                                          const std::string& continue_token) {
  if (stopped_) return absl::CancelledError("stopped");
  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> cli = Connect(60);
  if (!cli.ok()) return cli.status();
  std::string url = absl::StrCat(config_.base_path, path, "?limit=", limit);
  if (!field_selector.empty()) absl::StrAppend(&url, "&fieldSelector=", UrlEncode(field_selector));
  if (!continue_token.empty()) absl::StrAppend(&url, "&continue=", UrlEncode(continue_token));
  httplib::Result res = (*cli)->Get(url, httplib::Headers{{"Accept", "application/json"}});
  if (!res) return absl::UnavailableError(absl::StrCat("LIST ", path, ": ", httplib::to_string(res.error())));
  if (res->status != 200) return HttpError(res->status, res->body, absl::StrCat("LIST ", path));
  absl::StatusOr<Json> body = ParseJsonObject(res->body);
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

absl::Status KubeClient::Watch(const std::string& path, const std::string& field_selector,
                               const std::string& resource_version, int timeout_seconds,
                               const std::function<bool(const WatchEvent&)>& on_event) {
  if (stopped_) return absl::CancelledError("stopped");
  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> cli = Connect(timeout_seconds + 30);
  if (!cli.ok()) return cli.status();
  {
    std::lock_guard<std::mutex> lock(watches_mu_);
    watches_.insert(cli->get());
  }
  std::string url =
      absl::StrCat(config_.base_path, path, "?watch=1&allowWatchBookmarks=true&timeoutSeconds=", timeout_seconds,
                   "&resourceVersion=", UrlEncode(resource_version));
  if (!field_selector.empty()) absl::StrAppend(&url, "&fieldSelector=", UrlEncode(field_selector));
  std::string buffer, error_body;
  absl::Status stream_status = absl::OkStatus();
  int http_status = 0;
  constexpr size_t kMaxLine = 64u << 20;
  httplib::Result res = (*cli)->Get(
      url, httplib::Headers{{"Accept", "application/json"}},
      [&](const httplib::Response& r) {
        http_status = r.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (stopped_) {
          stream_status = absl::CancelledError("stopped");
          return false;
        }
        if (http_status != 200) {
          if (error_body.size() < 65536) error_body.append(data, n);
          return true;
        }
        buffer.append(data, n);
        size_t start = 0, nl;
        while ((nl = buffer.find('\n', start)) != std::string::npos) {
          absl::string_view line(buffer.data() + start, nl - start);
          start = nl + 1;
          if (line.find_first_not_of(" \r\t") == absl::string_view::npos) continue;
          absl::StatusOr<Json> j = ParseJsonObject(line);
          if (!j.ok()) {
            stream_status = absl::InvalidArgumentError(absl::StrCat("WATCH ", path, ": ", j.status().message()));
            return false;
          }
          WatchEvent ev;
          ev.type = StringField(*j, "type");
          if (const Json* o = FindField(*j, "object")) ev.object = *o;
          if (ev.type == "ERROR") {
            int code = 0;
            if (const Json* c = FindField(ev.object, "code"); c && c->is_number_integer()) code = c->get<int>();
            stream_status = HttpError(code, ev.object.dump(), absl::StrCat("WATCH ", path));
            return false;
          }
          if (!on_event(ev)) {
            stream_status = absl::CancelledError("watch cancelled by its handler");
            return false;
          }
        }
        buffer.erase(0, start);
        if (buffer.size() > kMaxLine) {
          stream_status = absl::InvalidArgumentError(absl::StrCat("WATCH ", path, ": event larger than 64 MiB"));
          return false;
        }
        return true;
      });
  {
    std::lock_guard<std::mutex> lock(watches_mu_);
    watches_.erase(cli->get());
  }
  if (!stream_status.ok()) return stream_status;
  if (stopped_) return absl::CancelledError("stopped");
  if (http_status != 0 && http_status != 200) return HttpError(http_status, error_body, absl::StrCat("WATCH ", path));
  if (!res) {
    // A read timeout or a reset after the stream started is an ordinary end: resume from the last version.
    if (res.error() == httplib::Error::Read && http_status == 200) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat("WATCH ", path, ": ", httplib::to_string(res.error())));
  }
  return absl::OkStatus();
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
  if (stopped_) return absl::CancelledError("stopped");
  const std::string path = absl::StrCat(config_.base_path, "/api/v1/namespaces/", UrlEncode(pod_namespace), "/pods/",
                                        UrlEncode(pod_name), "/", subresource);
  std::lock_guard<std::mutex> lock(bind_mu_);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!bind_client_ || attempt > 0) {
      absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> cli = Connect(30);
      if (!cli.ok()) return cli.status();
      bind_client_ = std::move(*cli);
    }
    if (std::string token = config_.CurrentToken(); !token.empty()) bind_client_->set_bearer_token_auth(token);
    httplib::Result res = bind_client_->Post(path, body.dump(), "application/json");
    if (!res) {
      if (attempt == 0) continue;  // a kept-alive connection the server closed: reconnect once
      return absl::UnavailableError(absl::StrCat("POST ", path, ": ", httplib::to_string(res.error())));
    }
    if (res->status == 200 || res->status == 201) return absl::OkStatus();
    return HttpError(res->status, res->body, absl::StrCat("POST ", path));
  }
  return absl::UnavailableError("unreachable");
}

void KubeClient::Stop() {
  stopped_ = true;
  std::lock_guard<std::mutex> lock(watches_mu_);
  for (httplib::ClientImpl* c : watches_) c->stop();
}

}  // namespace rackwise::k8s
