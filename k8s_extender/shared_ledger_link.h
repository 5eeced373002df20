// The extender's link to the shared power ledger (a `ledger:` section; ledger_link/ledger_booking.h): its own
// allocations placed alone are booked and released through the face's LedgerBooking, the k8s/ list is synced on
// the timer's beat (re-mirroring the other owners; after a relist or a fallback, reconciling the whole list), and
// while the ledger is unreachable filter's reasons carry a note saying so. Owners are named in ledger_owners.h.
//
// It holds the gate (null: no shared ledger, the extender's ledger alone decides), when it last synced, and
// whether the next beat must sync (and reconcile) at once.
//
// Thread safety: none of its own. ExtenderService calls it only with its mutex held; the gate's round trips on
// the decision path (ReserveAndCommit, Release) are bounded by the face's own deadlines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ledger_booking.h"
#include "rackwise/allocation.h"
#include "rackwise/ledger.h"

namespace rackwise::k8s {

class SharedLedgerLink {
 public:
  // Books and releases through `gate` from now on (it must outlive the link); null: the local ledger alone.
  void SetGate(ledger::LedgerBooking* gate) { gate_ = gate; }
  ledger::LedgerBooking* gate() const { return gate_; }
  bool active() const { return gate_ != nullptr; }

  // A placement made alone (a pod, an operator's job): through the shared ledger when there is one.
  absl::Status CommitAlone(Ledger& local, const std::string& owner, const Allocation& allocation);
  void ReleaseAlone(Ledger& local, const std::string& owner, const std::string& allocation_id);

  // Whether the timer's beat at `now_ms` should sync: active, and due (after a list or a relist) or
  // `interval_ms` since the last sync. Records the beat when it answers true.
  bool TakeSyncBeat(int64_t now_ms, int64_t interval_ms);
  // Syncs `own` (every allocation of the extender's) with the shared ledger, reconciling when one is due.
  void Sync(Ledger& local, absl::Span<const ledger::OwnAllocation> own);
  // A relist or an undone release: the next beat syncs at once and reconciles the whole list.
  void MarkReconcileDue() { sync_due_ = reconcile_due_ = true; }

  // " (...)" saying that decisions are made within the guaranteed slice while the shared ledger is
  // unreachable; empty otherwise. Appended to filter reasons.
  std::string FallbackNote() const;
  // The booking gauges; nothing without a shared ledger (the metrics are as before).
  void RenderMetrics(std::string* out) const;

 private:
  ledger::LedgerBooking* gate_ = nullptr;
  int64_t last_sync_ms_ = 0;
  bool sync_due_ = true;        // the first beat after the API server's list syncs at once
  bool reconcile_due_ = false;  // a relist rebuilt the pods: the next sync reconciles the whole list
};

}  // namespace rackwise::k8s
