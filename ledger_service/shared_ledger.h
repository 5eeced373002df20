// The authority of the shared power ledger: the core's Ledger (GPU exclusivity, every rack and power-domain
// cap, the policy's reserve) in memory, with every change written to a LedgerStore first. A change is checked in
// memory, written to the store in one fenced write, and only then committed in memory; when the write fails
// nothing changes. So memory and store hold the same allocations at every moment the lock is free.
//
// Reserve also applies the guaranteed-slice rule (rackwise/guaranteed_slices.h) with the owners' shares of the
// description's `ledger:` section, so that a face cut off from the ledger can fall back to its slice safely.
// Reconcile records what runs even past the rule (as past a cap): the work runs already.
//
// Only a replica that leads serves: TakeOver (on winning the election) loads the store into a fresh ledger and
// sets how long its lease is known to be live; ExtendLease moves that on; StopServing (lease lost) or the
// deadline passing stops every call at once, before the store's fence would refuse the write anyway.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ledger_store.h"
#include "rackwise/guaranteed_slices.h"
#include "rackwise/ledger.h"
#include "rackwise/ledger_owner.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise::ledger {

struct ReconcileOutcome {
  uint32_t added = 0, replaced = 0, released = 0, unchanged = 0;
  std::vector<std::string> refused;  // "owner: reason"
};

// What one rack draws, split by the kind of owner.
struct RackDrawByOwner {
  std::string rack;
  Milliwatts cap = 0, idle = 0, slurm = 0, k8s = 0, other = 0;
};

class SharedLedger {
 public:
  using Clock = std::chrono::steady_clock;

  // `topology` and `store` must outlive this. Without `slices`, every owner's share is 0 (full sharing: the rule
  // is then the usable caps alone).
  SharedLedger(const Topology* topology, LedgerStore* store);
  SharedLedger(const Topology* topology, LedgerStore* store, GuaranteedSlices slices);

  // Loads every stored allocation (recover mode: what runs is recorded even over a cap) into a fresh ledger and
  // serves until `lease_deadline`. A stored allocation the ledger cannot take (a node gone from the description,
  // a GPU held twice) is an error: serving on a partial ledger would lose it.
  absl::Status TakeOver(Clock::time_point lease_deadline);
  void ExtendLease(Clock::time_point lease_deadline);
  void StopServing();
  bool serving() const;

  // Reserves `request` for its owner (request.id()) under the policy's usable caps and the guaranteed-slice rule. The
  // same owner with the same content again is a no-op; with other content AlreadyExists. FailedPrecondition names the
  // cap or GPU. Every call is Unavailable while this replica does not serve (not the leader, its lease lapsed, or
  // fenced out by a newer leader): not an answer, so that a client tries another replica.
  absl::Status Reserve(const v1::Allocation& request);
  // Returns false when the owner held nothing.
  absl::StatusOr<bool> Release(absl::string_view owner);
  // Makes what is held under `owner_prefix` exactly `allocations` (see ReconcileRequest). Listed owners must be
  // under the prefix and each listed once (InvalidArgument otherwise, nothing changed). Writes in batches of the
  // store's limit; if a batch fails, the batches before it stay applied (store and memory alike) and the error is
  // returned: the same call again completes the work.
  absl::StatusOr<ReconcileOutcome> Reconcile(absl::string_view owner_prefix,
                                             absl::Span<const v1::Allocation> allocations);

  // Held allocations whose owner starts with `owner_prefix` (empty: all), by owner.
  absl::StatusOr<std::vector<v1::Allocation>> List(absl::string_view owner_prefix) const;
  size_t allocation_count() const;
  std::vector<RackDrawByOwner> DrawByOwner() const;

 private:
  absl::Status CheckServingLocked() const;
  absl::StatusOr<ReconcileOutcome> ReconcileLocked(absl::string_view owner_prefix,
                                                   absl::Span<const v1::Allocation> allocations,
                                                   std::vector<Allocation> listed, ReconcileOutcome outcome);
  // Adds and replaces in batches after the releases: see Reconcile.
  absl::Status WriteUpserts(absl::Span<const Allocation> upserts, ReconcileOutcome* outcome);
  absl::Status WriteReleases(absl::Span<const std::string> owners);
  std::string Serialise(const Allocation& allocation) const;

  const Topology* topology_;
  LedgerStore* store_;
  mutable std::mutex mu_;
  std::unique_ptr<Ledger> ledger_;             // null until the first TakeOver
  GuaranteedSlices slices_;                    // what each owner holds of ledger_, against its slice
  std::atomic<int64_t> lease_deadline_ns_{0};  // steady clock; 0: not serving
};

}  // namespace rackwise::ledger
