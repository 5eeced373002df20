// The extender's link to the shared power ledger. See shared_ledger_link.h.
#include "shared_ledger_link.h"

#include "absl/strings/str_cat.h"

namespace rackwise::k8s {

absl::Status SharedLedgerLink::CommitAlone(Ledger& local, const std::string& owner, const Allocation& allocation) {
  return ledger::BookOrCommit(gate_, local, owner, allocation);
}

void SharedLedgerLink::ReleaseAlone(Ledger& local, const std::string& owner, const std::string& allocation_id) {
  ledger::ReleaseBooked(gate_, local, owner, allocation_id);
}

bool SharedLedgerLink::TakeSyncBeat(int64_t now_ms, int64_t interval_ms) {
  if (gate_ == nullptr) return false;
  if (!sync_due_ && now_ms - last_sync_ms_ < interval_ms) return false;
  last_sync_ms_ = now_ms;
  return true;
}

void SharedLedgerLink::Sync(Ledger& local, absl::Span<const ledger::OwnAllocation> own) {
  sync_due_ = false;
  // The gate logs the mode's changes and keeps the reason for filter; nothing else to do with the status (a
  // failed sync leaves the gate in fallback, whose return reconciles anyway).
  (void)gate_->Sync(local, own, reconcile_due_);
  reconcile_due_ = false;
}

std::string SharedLedgerLink::FallbackNote() const {
  if (gate_ == nullptr || !gate_->in_fallback()) return "";
  return absl::StrCat(" (shared power ledger unreachable: deciding within Kubernetes' guaranteed slice; ",
                      gate_->fallback_reason(), ")");
}

void SharedLedgerLink::RenderMetrics(std::string* out) const {
  if (gate_ == nullptr) return;
  out->append(ledger::BookingMetricsText(*gate_));
}

}  // namespace rackwise::k8s
