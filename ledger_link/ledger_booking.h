// What a face calls to book its work in the shared power ledger: reserve before the work starts, release when
// it ends, and keep its own ledger in step with the others'. LedgerLink (ledger_link.h) is the implementation
// over rackwise-ledger; a face holds this interface so that its tests can stand in for the ledger service.
// Calls are made under the lock that guards the face's ledger; each returns within the description's
// deadline_ms (Sync within two). in_fallback(), fallback_reason() and fallbacks() may be read from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "rackwise/ledger.h"

namespace rackwise::ledger {

// One of the face's own allocations: its ledger owner, and the allocation as the face's ledger holds it.
struct OwnAllocation {
  std::string owner;
  Allocation allocation;
};

class LedgerBooking {
 public:
  virtual ~LedgerBooking() = default;
  // Reserves `allocation` for `owner` in the shared ledger, then commits it to `local`. FailedPrecondition whose
  // message names the shared ledger (or, while it is unreachable, the face's guaranteed slice) when refused;
  // `local` is unchanged then.
  virtual absl::Status ReserveAndCommit(Ledger& local, const std::string& owner, const Allocation& allocation) = 0;
  // Releases `local_id` (if not empty) from `local` and `owner` from the shared ledger (later, by Sync's
  // reconcile, while it is unreachable).
  virtual void Release(Ledger& local, const std::string& owner, const std::string& local_id) = 0;
  // Mirrors the other owners' allocations into `local`; on return from a fallback, or with `reconcile` (the
  // face rebuilt its list), first reconciles `own`, the face's whole list under its prefix.
  virtual absl::Status Sync(Ledger& local, absl::Span<const OwnAllocation> own, bool reconcile) = 0;
  // True while the shared ledger is unreachable: decisions are made within the face's guaranteed slice.
  virtual bool in_fallback() const = 0;
  // Why it is in fallback (empty when shared).
  virtual std::string fallback_reason() const = 0;
  // How many times it entered fallback.
  virtual uint64_t fallbacks() const = 0;
};

// A face's booking of one of its allocations, with or without a shared ledger: through `booking`
// (ReserveAndCommit, Release) when there is one, in `local` alone when `booking` is null.
absl::Status BookOrCommit(LedgerBooking* booking, Ledger& local, const std::string& owner,
                          const Allocation& allocation);
void ReleaseBooked(LedgerBooking* booking, Ledger& local, const std::string& owner, const std::string& local_id);

// The two series every face exports about its booking: rackwise_ledger_fallback (gauge, 1 in fallback) and
// rackwise_ledger_fallbacks_total (counter), in the Prometheus text format.
std::string BookingMetricsText(const LedgerBooking& booking);

}  // namespace rackwise::ledger
