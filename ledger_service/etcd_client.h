// A small client of etcd's v3 API through its JSON gRPC gateway (etcd 3.4: POST /v3/kv/range, /v3/kv/txn,
// /v3/kv/deleterange, /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke). Keys and values are bytes here
// and base64 on the wire; revisions and lease ids are int64 here and decimal strings on the wire.
//
// One connection, reused (keep-alive), every call bounded by the timeout. Calls are serialised by a mutex, so a
// caller that must not wait behind another (the leader election's keep-alive) uses its own client.
// Errors name the endpoint and carry what etcd said, with etcd's gRPC code as the status code.
// TLS as etcdctl's --cacert, --cert and --key: https:// verifies etcd's certificate against the CA (and its
// name against the URL's host) and presents the client certificate etcd's --client-cert-auth asks for. Plain
// http:// is for an etcd on loopback only (CheckEtcdEndpoint): whoever reaches etcd can rewrite the ledger.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rackwise::http {
class HttpClient;
}

namespace rackwise::ledger {

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

// One compare of a transaction; all compares are "equal".
struct EtcdCompare {
  enum class Target { kCreateRevision, kValue };
  std::string key;
  Target target = Target::kCreateRevision;
  int64_t create_revision = 0;  // kCreateRevision: 0 means "the key does not exist"
  std::string value;            // kValue
};

// One operation of a transaction's success branch.
struct EtcdWrite {
  enum class Kind { kPut, kDelete };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;  // kPut
  int64_t lease = 0;  // kPut: 0 for none
};

struct EtcdTxnResult {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the transaction (a put's create_revision when it created)
};

// PEM files for https:// endpoints.
struct EtcdTls {
  std::string ca_file;    // the CA that signed etcd's server certificate (--etcd-cacert)
  std::string cert_file;  // this client's certificate (--etcd-cert), with key_file
  std::string key_file;   // (--etcd-key)
};

// OK for "https://HOST:PORT" with a readable CA (and a certificate and key together, or neither), and for
// "http://" to a loopback address (127.0.0.0/8, ::1, localhost) without TLS files; InvalidArgument saying why
// otherwise.
absl::Status CheckEtcdEndpoint(const std::string& endpoint, const EtcdTls& tls);

class EtcdClient {
 public:
  // `endpoint`: "http://host:port" or "https://host:port" (with `tls`). `timeout_ms` bounds each call,
  // connecting and the TLS handshake included.
  EtcdClient(std::string endpoint, int timeout_ms, EtcdTls tls = {});
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  const std::string& endpoint() const { return endpoint_; }

  // GET /health: OK when etcd answers {"health":"true"}.
  absl::Status Health();
  // The key, if present (an empty vector when not).
  absl::StatusOr<std::vector<EtcdKeyValue>> Get(absl::string_view key);
  // Every key starting with `prefix`, in key order.
  absl::StatusOr<std::vector<EtcdKeyValue>> GetPrefix(absl::string_view prefix);
  // If every compare holds, applies every write atomically. etcd refuses more than --max-txn-ops (128) writes.
  absl::StatusOr<EtcdTxnResult> Txn(absl::Span<const EtcdCompare> compares, absl::Span<const EtcdWrite> writes);
  // Deletes every key starting with `prefix`; returns how many.
  absl::StatusOr<int64_t> DeletePrefix(absl::string_view prefix);

  absl::StatusOr<int64_t> LeaseGrant(int ttl_s);  // the lease id
  // Renews the lease; returns the TTL left in seconds, 0 when the lease is gone (expired or revoked).
  absl::StatusOr<int64_t> LeaseKeepAlive(int64_t lease);
  absl::Status LeaseRevoke(int64_t lease);

  // The range end that selects every key starting with `prefix` (the prefix with its last byte below 0xff
  // incremented; "\0" for an empty prefix, i.e. every key).
  static std::string PrefixEnd(absl::string_view prefix);

 private:
  // POSTs (or GETs when `body` is empty) and returns the response body, or the error etcd or HTTP reported.
  absl::StatusOr<std::string> Call(absl::string_view path, const std::string& body);
  absl::StatusOr<std::vector<EtcdKeyValue>> Range(absl::string_view key, absl::string_view range_end);

  std::string endpoint_;
  int timeout_ms_;
  std::unique_ptr<http::HttpClient> client_;  // one kept-alive connection; serializes the calls
};

}  // namespace rackwise::ledger
