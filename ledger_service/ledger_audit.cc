// See ledger_audit.h.
#include "ledger_audit.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "prometheus_text.h"

namespace rackwise::ledger {

const char* AuditOutcome(const grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "accepted";
    case grpc::StatusCode::UNAUTHENTICATED: return "unauthenticated";
    case grpc::StatusCode::PERMISSION_DENIED: return "denied";
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "unavailable";
    default: return "refused";
  }
}

void LedgerAudit::Record(absl::string_view identity, absl::string_view verb, absl::string_view owner,
                         absl::string_view outcome, absl::string_view message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[{std::string(identity), std::string(verb), std::string(outcome)}];
  }
  // The owner and the message come from the caller: escaped, so that a line break cannot forge a log line.
  if (log_)
    log_(absl::StrCat("audit: ", identity, " ", verb, " ", absl::CHexEscape(owner.substr(0, 200)), ": ", outcome,
                      message.empty() ? "" : absl::StrCat(" (", absl::CHexEscape(message.substr(0, 300)), ")")));
}

uint64_t LedgerAudit::Count(absl::string_view identity, absl::string_view verb, absl::string_view outcome) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find({std::string(identity), std::string(verb), std::string(outcome)});
  return it == counts_.end() ? 0 : it->second;
}

std::string LedgerAudit::MetricsText() const {
  std::string out =
      "# HELP rackwise_ledger_audit_total Writes the ledger accepted or refused, and reads it refused, by caller "
      "identity, verb and outcome.\n# TYPE rackwise_ledger_audit_total counter\n";
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, count] : counts_) {
    const auto& [identity, verb, outcome] = key;
    absl::StrAppend(&out, "rackwise_ledger_audit_total{identity=\"", daemon::Label(identity), "\",verb=\"",
                    daemon::Label(verb), "\",outcome=\"", daemon::Label(outcome), "\"} ", count, "\n");
  }
  return out;
}

}  // namespace rackwise::ledger
