// The ledger's audit trail: every write it accepts or refuses (and every read it refuses) is one log line with
// the caller's identity, the verb, the owner and the outcome, and one count in
// rackwise_ledger_audit_total{identity,verb,outcome}, served on --metrics-listen with a few gauges of the
// replica's state. Identities come from the access file (and "anonymous", "none" for an unauthenticated
// caller), verbs and outcomes from short fixed lists: the label sets stay few. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <grpcpp/support/status.h>

#include "absl/strings/string_view.h"

namespace rackwise::ledger {

// The identity label of a caller the ledger could not authenticate.
inline constexpr char kNoIdentity[] = "none";

// "accepted", "unauthenticated", "denied", "unavailable" (not serving, etcd out of reach), else "refused" (the
// ledger's own answer: a cap, a GPU held, a bad request).
const char* AuditOutcome(const grpc::StatusCode code);

class LedgerAudit {
 public:
  using Log = std::function<void(const std::string&)>;
  explicit LedgerAudit(Log log) : log_(std::move(log)) {}

  // One call: logs "audit: <identity> <verb> <owner>: <outcome>[ (<message>)]" and counts it. `outcome`: as
  // AuditOutcome, or "not_leader" for a follower's redirect.
  void Record(absl::string_view identity, absl::string_view verb, absl::string_view owner, absl::string_view outcome,
              absl::string_view message = "");
  // How many calls `identity` made of `verb` with `outcome` (tests).
  uint64_t Count(absl::string_view identity, absl::string_view verb, absl::string_view outcome) const;
  // rackwise_ledger_audit_total in the Prometheus text format.
  std::string MetricsText() const;

 private:
  Log log_;
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> counts_;
};

}  // namespace rackwise::ledger
