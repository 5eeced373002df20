// libcurl under HttpClient. See http_client.h.
#include "http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"

namespace rackwise::http {
namespace {

// curl_global_init is not thread-safe; do it once, before any handle exists.
void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool Cancelled(const std::atomic<bool>* cancel) { return cancel != nullptr && cancel->load(); }

// A PEM held in memory, handed to curl as a blob (curl copies it).
void SetBlob(CURL* curl, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(curl, option, &blob);
}

void SetTls(CURL* curl, const ClientTls& tls) {
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, tls.verify_server ? 1L : 0L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, tls.verify_server ? 2L : 0L);
  if (!tls.ca_file.empty() || !tls.ca_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAPATH, static_cast<char*>(nullptr));  // that CA alone, not the system's
    if (!tls.ca_file.empty()) {
      curl_easy_setopt(curl, CURLOPT_CAINFO, tls.ca_file.c_str());
    } else {
      curl_easy_setopt(curl, CURLOPT_CAINFO, static_cast<char*>(nullptr));
      SetBlob(curl, CURLOPT_CAINFO_BLOB, tls.ca_pem);
    }
  }
  if (!tls.cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, tls.cert_file.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, tls.key_file.c_str());
  } else if (!tls.cert_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    SetBlob(curl, CURLOPT_SSLCERT_BLOB, tls.cert_pem);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    SetBlob(curl, CURLOPT_SSLKEY_BLOB, tls.key_pem);
  }
}

}  // namespace

// What one request's callbacks share with Perform.
struct HttpClient::Transfer {
  CURL* curl = nullptr;
  const ClientOptions* options = nullptr;
  const std::function<bool(absl::string_view)>* on_chunk = nullptr;  // streams a 200 body when set
  int* status = nullptr;
  std::string body;
  bool too_large = false;
  bool stopped_by_reader = false;

  static size_t Write(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t n = size * count;
    if (Cancelled(t->options->cancel)) return 0;
    long code = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    if (t->on_chunk != nullptr && code == 200) {
      if ((*t->on_chunk)(absl::string_view(data, n))) return n;
      t->stopped_by_reader = true;
      return 0;
    }
    if (t->body.size() + n > t->options->max_body_bytes) {
      t->too_large = true;
      return 0;  // makes curl stop with CURLE_WRITE_ERROR
    }
    t->body.append(data, n);
    return n;
  }

  // Called about once a second even while nothing arrives: the way a cancel reaches an idle stream.
  static int Progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return Cancelled(static_cast<Transfer*>(user)->options->cancel) ? 1 : 0;
  }
};

HttpClient::HttpClient(ClientOptions options) : options_(std::move(options)) { GlobalInitOnce(); }

HttpClient::~HttpClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

absl::StatusOr<HttpAnswer> HttpClient::Send(const HttpRequest& request) {
  Transfer transfer;
  return Perform(request, transfer);
}

absl::StatusOr<HttpAnswer> HttpClient::Stream(const HttpRequest& request,
                                              const std::function<bool(absl::string_view)>& on_chunk, int* status) {
  Transfer transfer;
  transfer.on_chunk = &on_chunk;
  transfer.status = status;
  return Perform(request, transfer);
}

absl::StatusOr<HttpAnswer> HttpClient::Perform(const HttpRequest& request, Transfer& transfer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Cancelled(options_.cancel)) return absl::CancelledError("stopped");
  if (curl_ == nullptr) curl_ = curl_easy_init();
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  curl_easy_reset(curl);  // options go, the kept-alive connection stays
  transfer.curl = curl;
  transfer.options = &options_;
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  // Never anything but the URL's own server and scheme: a redirect must not carry a token or a ledger write.
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  if (options_.total_timeout.count() > 0)
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.total_timeout.count()));
  // Less than one byte a second for idle_timeout: the server is gone.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                   static_cast<long>(std::max<int64_t>(1, (options_.idle_timeout.count() + 999) / 1000)));
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  SetTls(curl, options_.tls);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Transfer::Write);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &Transfer::Progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_slist* headers = nullptr;
  for (const std::string& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  if (request.method == HttpRequest::Method::kPost) {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip for a large body
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  long code = 0;  // the status line's, when one came, even if the transfer failed after it
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  if (transfer.status != nullptr) *transfer.status = static_cast<int>(code);
  const std::string where = request.url.substr(0, request.url.find('?'));
  if (transfer.too_large)
    return absl::ResourceExhaustedError(
        absl::StrCat(where, ": the answer is larger than ", options_.max_body_bytes, " bytes"));
  if (transfer.stopped_by_reader) return absl::CancelledError(absl::StrCat(where, ": stopped by its reader"));
  if (rc == CURLE_ABORTED_BY_CALLBACK || (rc == CURLE_WRITE_ERROR && Cancelled(options_.cancel)))
    return absl::CancelledError("stopped");
  const std::string what = error[0] != 0 ? std::string(error) : std::string(curl_easy_strerror(rc));
  if (rc == CURLE_OPERATION_TIMEDOUT) return absl::DeadlineExceededError(absl::StrCat(where, ": ", what));
  if (rc != CURLE_OK) return absl::UnavailableError(absl::StrCat(where, ": ", what));
  return HttpAnswer{static_cast<int>(code), std::move(transfer.body)};
}

std::string UrlEncode(absl::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
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

}  // namespace rackwise::http
