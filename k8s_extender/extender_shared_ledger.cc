// The extender service as a client of the shared power ledger: its own allocations booked and
// released through the face's LedgerBooking, the list it reconciles, the fallback's note and gauges. See
// extender_service.h and ledger_owners.h.
#include "absl/strings/str_cat.h"
#include "extender_service.h"

namespace rackwise::k8s {

void ExtenderService::SetSharedLedger(ledger::LedgerBooking* gate) {
  std::lock_guard<std::mutex> lock(mu_);
  gate_ = gate;
  gangs_.SetGate(gate);
}

absl::Status ExtenderService::CommitAloneLocked(const std::string& owner, const Allocation& allocation) {
  if (gate_ == nullptr) return ledger_.Commit(allocation);
  return gate_->ReserveAndCommit(ledger_, owner, allocation);
}

void ExtenderService::ReleaseAloneLocked(const std::string& owner, const std::string& allocation_id) {
  oversubscribed_.Forget(allocation_id);
  if (gate_ == nullptr) {
    ledger_.Release(allocation_id);
  } else {
    gate_->Release(ledger_, owner, allocation_id);
  }
}

std::vector<ledger::OwnAllocation> ExtenderService::OwnAllocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return OwnAllocationsLocked();
}

std::vector<ledger::OwnAllocation> ExtenderService::OwnAllocationsLocked() const {
  std::vector<ledger::OwnAllocation> own;
  for (const auto& [key, record] : pods_) {
    if (!record.group.empty()) continue;  // its slot is listed with its group below
    if (const Allocation* a = ledger_.Find(record.allocation_id)) own.push_back({record.owner, *a});
  }
  for (const auto& [id, placed] : operator_ids_) {
    if (const Allocation* a = ledger_.Find(id)) own.push_back({OperatorOwner(id), *a});
  }
  for (const auto& [group, reservation] : gangs_.all()) {
    for (const GangSlot& slot : reservation.slots) {
      if (const Allocation* a = ledger_.Find(slot.allocation_id))
        own.push_back({GangSlotOwner(slot.allocation_id), *a});
    }
  }
  return own;
}

void ExtenderService::SyncSharedLedger(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  // Before the API server's list the extender's own list is incomplete: a reconcile would release what runs.
  if (gate_ == nullptr || !synced_) return;
  if (!ledger_sync_due_ && now_ms - last_ledger_sync_ms_ < options_.ledger_sync_ms) return;
  last_ledger_sync_ms_ = now_ms;
  SyncSharedLedgerLocked();
}

void ExtenderService::SyncSharedLedgerLocked() {
  ledger_sync_due_ = false;
  // The gate logs the mode's changes and keeps the reason for filter; nothing else to do with the status (a
  // failed sync leaves the gate in fallback, whose return reconciles anyway).
  (void)gate_->Sync(ledger_, OwnAllocationsLocked(), ledger_reconcile_due_);
  ledger_reconcile_due_ = false;
}

std::string ExtenderService::FallbackNoteLocked() const {
  if (gate_ == nullptr || !gate_->in_fallback()) return "";
  return absl::StrCat(" (shared power ledger unreachable: deciding within Kubernetes' guaranteed slice; ",
                      gate_->fallback_reason(), ")");
}

void ExtenderService::RenderSharedLedgerMetrics(std::string* out) const {
  if (gate_ == nullptr) return;  // no `ledger:` section: the metrics are as before
  out->append(ledger::BookingMetricsText(*gate_));
}

}  // namespace rackwise::k8s
