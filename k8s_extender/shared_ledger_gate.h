// The extender's door to the shared power ledger (rackwise-ledger), when the description has a
// `ledger:` section. Every booking of the extender's own (a pod bound alone, a gang slot planned at filter
// time) goes through it before it counts in the extender's ledger, and every release too, so that Slurm and
// Kubernetes never pass a cap together. The interface lives here and the implementation beside the ledger
// service (ledger_service/extender_ledger_gate.h, over LedgerLink), because the ledger library links this one:
// the extender's library stays free of gRPC to the ledger, and without a `ledger:` section nothing is linked in.
//
// Owners: "k8s/<namespace>/<pod uid>" for a pod placed alone; a gang slot is booked before any pod holds it,
// so it is owned by the slot itself, "k8s/<namespace>/<kind>:<group>#<n>" (GangSlotOwner).
// Called under the extender service's lock; every call returns within the ledger's deadline (Sync within
// two), so a kube-scheduler request never waits longer than that on the ledger.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "rackwise/ledger.h"

namespace rackwise::k8s {

// One of the extender's own allocations as the shared ledger knows it: its owner, and the local allocation.
struct OwnedAllocation {
  std::string owner;
  Allocation allocation;
};

class SharedLedgerGate {
 public:
  virtual ~SharedLedgerGate() = default;
  // Reserves `allocation` under `owner` in the shared ledger, then commits it to `local`. FailedPrecondition
  // whose message names the shared ledger when it (or, while it is unreachable, the guaranteed slice) refuses;
  // `local` is unchanged then.
  virtual absl::Status ReserveAndCommit(Ledger& local, const std::string& owner, const Allocation& allocation) = 0;
  // Releases `local_id` from `local` and `owner` from the shared ledger (later, by Sync, if it is unreachable).
  virtual void Release(Ledger& local, const std::string& owner, const std::string& local_id) = 0;
  // Mirrors the other owners' allocations; after a fallback, or with `reconcile` (a relist rebuilt the
  // extender's list), first reconciles `own` (the whole k8s/ list).
  virtual absl::Status Sync(Ledger& local, const std::vector<OwnedAllocation>& own, bool reconcile) = 0;
  // True while the shared ledger is unreachable: decisions are made within the extender's guaranteed slice.
  virtual bool in_fallback() const = 0;
  // Why it is in fallback (empty when shared).
  virtual std::string fallback_reason() const = 0;
  // How many times the gate entered fallback.
  virtual uint64_t fallbacks() const = 0;
};

// "k8s/<namespace>/<pod uid>" (the pod's name when the uid is unknown). `key` is "<namespace>/<name>".
std::string PodOwner(const std::string& key, const std::string& uid);
// "<namespace>/<kind>/<group>#<n>" -> "k8s/<namespace>/<kind>:<group>#<n>": an owner has three segments.
std::string GangSlotOwner(const std::string& slot_id);
// An operator's placement over gRPC (Place with commit) under id `id`: "k8s/_operator/<id>", every byte of the id
// outside [A-Za-z0-9.:_-] written as %XX so that the owner keeps three segments. "_operator" cannot be a
// Kubernetes namespace (a DNS label has no '_'), so no pod's owner can take it; under "k8s/", the extender's
// reconcile keeps it with the pods.
std::string OperatorOwner(const std::string& id);

}  // namespace rackwise::k8s
