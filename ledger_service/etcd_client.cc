// See etcd_client.h. The gateway's JSON is protobuf's JSON mapping: fields at their default (false, 0, empty)
// are left out, so a missing "succeeded" means false and a missing "TTL" means 0.
#include "etcd_client.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "daemon_support.h"
#include "http_client.h"
#include "loopback.h"

namespace rackwise::ledger {
namespace {

using nlohmann::json;

// An int64 that the gateway writes as a decimal string (or, from other encoders, as a number); 0 when absent.
absl::StatusOr<int64_t> Int64Field(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  int64_t value = 0;
  if (it->is_string() && absl::SimpleAtoi(it->get<std::string>(), &value)) return value;
  return absl::InternalError(absl::StrCat("etcd answered a non-integer '", name, "': ", it->dump()));
}

// A string field; "" when absent or not a string (etcd's JSON is trusted to be well-formed, but a proxy or a
// different server on the port must give an error, not an exception).
std::string StringField(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

absl::StatusOr<json> ParseJson(absl::string_view where, const std::string& body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object())
    return absl::InternalError(
        absl::StrCat(where, ": etcd answered something that is not a JSON object: ", body.substr(0, 200)));
  return parsed;
}

// etcd's JSON gateway carries every key and value as base64 (RFC 4648).
std::string Base64Encode(absl::string_view bytes) { return absl::Base64Escape(bytes); }
absl::StatusOr<std::string> Base64Decode(const json& kv, const char* name) {
  std::string out;
  if (!absl::Base64Unescape(StringField(kv, name), &out))
    return absl::InternalError(absl::StrCat("etcd answered a '", name, "' that is not base64"));
  return out;
}

absl::StatusOr<EtcdKeyValue> KeyValueFromJson(const json& kv) {
  EtcdKeyValue out;
  if (!kv.is_object()) return absl::InternalError(absl::StrCat("etcd answered a key-value that is not an object"));
  absl::StatusOr<std::string> key = Base64Decode(kv, "key");
  absl::StatusOr<std::string> value = Base64Decode(kv, "value");
  if (!key.ok()) return key.status();
  if (!value.ok()) return value.status();
  out.key = std::move(*key);
  out.value = std::move(*value);
  absl::StatusOr<int64_t> create = Int64Field(kv, "create_revision");
  absl::StatusOr<int64_t> mod = Int64Field(kv, "mod_revision");
  absl::StatusOr<int64_t> lease = Int64Field(kv, "lease");
  if (!create.ok()) return create.status();
  if (!mod.ok()) return mod.status();
  if (!lease.ok()) return lease.status();
  out.create_revision = *create;
  out.mod_revision = *mod;
  out.lease = *lease;
  return out;
}

json CompareToJson(const EtcdCompare& c) {
  json out = {{"key", Base64Encode(c.key)}, {"result", "EQUAL"}};
  if (c.target == EtcdCompare::Target::kCreateRevision) {
    out["target"] = "CREATE";
    out["create_revision"] = std::to_string(c.create_revision);
  } else {
    out["target"] = "VALUE";
    out["value"] = Base64Encode(c.value);
  }
  return out;
}

json WriteToJson(const EtcdWrite& w) {
  if (w.kind == EtcdWrite::Kind::kDelete) return {{"request_delete_range", {{"key", Base64Encode(w.key)}}}};
  json put = {{"key", Base64Encode(w.key)}, {"value", Base64Encode(w.value)}};
  if (w.lease != 0) put["lease"] = std::to_string(w.lease);
  return {{"request_put", put}};
}

}  // namespace

absl::Status CheckEtcdEndpoint(const std::string& endpoint, const EtcdTls& tls) {
  const bool files = !tls.ca_file.empty() || !tls.cert_file.empty() || !tls.key_file.empty();
  if (absl::StartsWith(endpoint, "http://")) {
    if (files)
      return absl::InvalidArgumentError(
          absl::StrCat("etcd ", endpoint, ": TLS files given for a plain http:// endpoint (use https://)"));
    std::string host;
    int port = 0;
    const absl::string_view address = absl::StripSuffix(absl::StripPrefix(endpoint, "http://"), "/");
    if (!daemon::SplitHostPort(std::string(address), &host, &port) || !IsLoopbackHost(host))
      return absl::InvalidArgumentError(absl::StrCat(
          "etcd ", endpoint,
          ": plain http:// only to an etcd on loopback (127.0.0.1, ::1, localhost); anyone who "
          "reaches etcd can rewrite the ledger: use https:// with --etcd-cacert, --etcd-cert and --etcd-key"));
    return absl::OkStatus();
  }
  if (!absl::StartsWith(endpoint, "https://"))
    return absl::InvalidArgumentError(absl::StrCat("etcd ", endpoint, ": the URL must be https://HOST:PORT"));
  if (tls.ca_file.empty())
    return absl::InvalidArgumentError(
        absl::StrCat("etcd ", endpoint, ": https:// needs --etcd-cacert (the CA that signed etcd's certificate)"));
  if (tls.cert_file.empty() != tls.key_file.empty())
    return absl::InvalidArgumentError(absl::StrCat("etcd ", endpoint, ": --etcd-cert and --etcd-key go together"));
  for (const std::string* file : {&tls.ca_file, &tls.cert_file, &tls.key_file}) {
    if (!file->empty() && ::access(file->c_str(), R_OK) != 0)
      return absl::InvalidArgumentError(absl::StrCat("etcd ", endpoint, ": cannot read '", *file, "'"));
  }
  return absl::OkStatus();
}

EtcdClient::EtcdClient(std::string endpoint, int timeout_ms, EtcdTls tls)
    : endpoint_(std::move(endpoint)),
      timeout_ms_(timeout_ms),
      client_(std::make_unique<http::HttpClient>(http::ClientOptions{
          .tls = {.ca_file = tls.ca_file, .cert_file = tls.cert_file, .key_file = tls.key_file},
          .connect_timeout = std::chrono::milliseconds(timeout_ms),
          .idle_timeout = std::chrono::milliseconds(timeout_ms),
          .total_timeout = std::chrono::milliseconds(timeout_ms),
          // Far above a ledger's whole prefix; a proxy or another server on the port cannot fill memory.
          .max_body_bytes = size_t{256} << 20})) {}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::PrefixEnd(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

absl::StatusOr<std::string> EtcdClient::Call(absl::string_view path, const std::string& body) {
  const std::string url = absl::StrCat(endpoint_, path);
  http::HttpRequest request{.url = url, .headers = {"Content-Type: application/json"}};
  if (!body.empty()) {
    request.method = http::HttpRequest::Method::kPost;
    request.body = body;
  }
  absl::StatusOr<http::HttpAnswer> answer = client_->Send(request);
  if (answer.status().code() == absl::StatusCode::kDeadlineExceeded)
    return absl::DeadlineExceededError(absl::StrCat("etcd ", url, ": no answer within ", timeout_ms_, " ms"));
  if (!answer.ok()) return absl::Status(answer.status().code(), absl::StrCat("etcd ", answer.status().message()));
  const int http_status = answer->status;
  std::string& response = answer->body;
  if (http_status == 200) return std::move(response);
  // The gateway's error body: {"error": ..., "message": ..., "code": <gRPC code>}.
  json error = json::parse(response, nullptr, /*allow_exceptions=*/false);
  int code = static_cast<int>(absl::StatusCode::kUnknown);
  std::string message = response.substr(0, 300);
  if (error.is_object()) {
    if (error.contains("code") && error["code"].is_number_integer()) code = error["code"].get<int>();
    if (error.contains("message") && error["message"].is_string()) message = error["message"].get<std::string>();
  }
  if (code <= 0 || code > 16) code = static_cast<int>(absl::StatusCode::kUnknown);
  return absl::Status(static_cast<absl::StatusCode>(code),
                      absl::StrCat("etcd ", url, " (HTTP ", http_status, "): ", message));
}

absl::Status EtcdClient::Health() {
  absl::StatusOr<std::string> body = Call("/health", "");
  if (!body.ok()) return body.status();
  absl::StatusOr<json> parsed = ParseJson(absl::StrCat(endpoint_, "/health"), *body);
  if (!parsed.ok()) return parsed.status();
  if (StringField(*parsed, "health") != "true")
    return absl::UnavailableError(absl::StrCat("etcd ", endpoint_, "/health: ", *body));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<EtcdKeyValue>> EtcdClient::Range(absl::string_view key, absl::string_view range_end) {
  json request = {{"key", Base64Encode(key)}};
  if (!range_end.empty()) request["range_end"] = Base64Encode(range_end);
  absl::StatusOr<std::string> body = Call("/v3/kv/range", request.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<json> parsed = ParseJson(absl::StrCat(endpoint_, "/v3/kv/range"), *body);
  if (!parsed.ok()) return parsed.status();
  std::vector<EtcdKeyValue> out;
  auto kvs = parsed->find("kvs");
  if (kvs == parsed->end()) return out;
  if (!kvs->is_array()) return absl::InternalError(absl::StrCat("etcd ", endpoint_, "/v3/kv/range: kvs is not a list"));
  out.reserve(kvs->size());
  for (const json& kv : *kvs) {
    absl::StatusOr<EtcdKeyValue> decoded = KeyValueFromJson(kv);
    if (!decoded.ok())
      return absl::InternalError(absl::StrCat("etcd ", endpoint_, "/v3/kv/range: ", decoded.status().message()));
    out.push_back(std::move(*decoded));
  }
  return out;
}

absl::StatusOr<std::vector<EtcdKeyValue>> EtcdClient::Get(absl::string_view key) { return Range(key, ""); }

absl::StatusOr<std::vector<EtcdKeyValue>> EtcdClient::GetPrefix(absl::string_view prefix) {
  return Range(prefix, PrefixEnd(prefix));
}

absl::StatusOr<EtcdTxnResult> EtcdClient::Txn(absl::Span<const EtcdCompare> compares,
                                              absl::Span<const EtcdWrite> writes) {
  json request = {{"compare", json::array()}, {"success", json::array()}};
  for (const EtcdCompare& c : compares) request["compare"].push_back(CompareToJson(c));
  for (const EtcdWrite& w : writes) request["success"].push_back(WriteToJson(w));
  absl::StatusOr<std::string> body = Call("/v3/kv/txn", request.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<json> parsed = ParseJson(absl::StrCat(endpoint_, "/v3/kv/txn"), *body);
  if (!parsed.ok()) return parsed.status();
  EtcdTxnResult out;
  auto succeeded = parsed->find("succeeded");
  out.succeeded = succeeded != parsed->end() && succeeded->is_boolean() && succeeded->get<bool>();
  auto header = parsed->find("header");
  if (header == parsed->end() || !header->is_object())
    return absl::InternalError(absl::StrCat("etcd ", endpoint_, "/v3/kv/txn: no header in ", body->substr(0, 200)));
  absl::StatusOr<int64_t> revision = Int64Field(*header, "revision");
  if (!revision.ok()) return revision.status();
  out.revision = *revision;
  return out;
}

absl::StatusOr<int64_t> EtcdClient::DeletePrefix(absl::string_view prefix) {
  json request = {{"key", Base64Encode(prefix)}, {"range_end", Base64Encode(PrefixEnd(prefix))}};
  absl::StatusOr<std::string> body = Call("/v3/kv/deleterange", request.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<json> parsed = ParseJson(absl::StrCat(endpoint_, "/v3/kv/deleterange"), *body);
  if (!parsed.ok()) return parsed.status();
  return Int64Field(*parsed, "deleted");
}

absl::StatusOr<int64_t> EtcdClient::LeaseGrant(int ttl_s) {
  absl::StatusOr<std::string> body = Call("/v3/lease/grant", json{{"TTL", std::to_string(ttl_s)}}.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<json> parsed = ParseJson(absl::StrCat(endpoint_, "/v3/lease/grant"), *body);
  if (!parsed.ok()) return parsed.status();
  if (!StringField(*parsed, "error").empty())
    return absl::UnavailableError(absl::StrCat("etcd ", endpoint_, "/v3/lease/grant: ", (*parsed)["error"].dump()));
  absl::StatusOr<int64_t> id = Int64Field(*parsed, "ID");
  if (id.ok() && *id == 0) return absl::InternalError(absl::StrCat("etcd ", endpoint_, "/v3/lease/grant: no ID"));
  return id;
}

absl::StatusOr<int64_t> EtcdClient::LeaseKeepAlive(int64_t lease) {
  // A streaming call on the gateway: one request, one {"result": ...} message, then the stream ends.
  absl::StatusOr<std::string> body = Call("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump());
  if (!body.ok()) return body.status();
  absl::StatusOr<json> parsed = ParseJson(absl::StrCat(endpoint_, "/v3/lease/keepalive"), *body);
  if (!parsed.ok()) return parsed.status();
  if (parsed->contains("error"))
    return absl::UnavailableError(absl::StrCat("etcd ", endpoint_, "/v3/lease/keepalive: ", (*parsed)["error"].dump()));
  auto result = parsed->find("result");
  if (result == parsed->end() || !result->is_object())
    return absl::InternalError(
        absl::StrCat("etcd ", endpoint_, "/v3/lease/keepalive: no result in ", body->substr(0, 200)));
  return Int64Field(*result, "TTL");
}

absl::Status EtcdClient::LeaseRevoke(int64_t lease) {
  absl::StatusOr<std::string> body = Call("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump());
  return body.ok() ? absl::OkStatus() : body.status();
}

}  // namespace rackwise::ledger
