// The last check before a face starts a job whose GPUs were not picked by the Placer alone (a scheduler that
// splits a job's GPUs its own way, a shape the core does not model): the GPUs must be free and healthy, and
// every rack and power domain the job touches must stay under its USABLE cap, the policy's power reserve kept
// free, exactly as the Placer would have kept it. The ledger alone enforces only the whole cap.
#pragma once

#include "absl/status/status.h"
#include "rackwise/allocation.h"
#include "rackwise/ledger.h"

namespace rackwise {

// Commits `allocation` if it passes the ledger's own checks and keeps every rack and power domain it touches
// at or under cap * (1 - power_reserve_fraction) (Ledger::Check with the policy's reserve). On refusal nothing
// changes and the status names the rack or power domain, what the job needs, the room left and the usable cap.
// An id already held with the same content is a no-op (as Ledger::Commit).
absl::Status CommitWithinUsableCaps(Ledger& ledger, const Allocation& allocation);

// The same test, read-only (before the job is handed to the scheduler). AlreadyExists if the id is held.
absl::Status CheckWithinUsableCaps(const Ledger& ledger, const Allocation& allocation);

// What a face does with a job the scheduler has just started, given what the face approved for it (the
// allocation its last start test let through, or none).
enum class StartVerdict {
  kWithinCaps,        // committed under the usable caps
  kLedgerMovedSince,  // what was approved, but the ledger moved between the approval and the start (a fresh
                      // reading, another owner's reservation): recorded; the overdraw policy answers for it
  kOutsidePlacement,  // not what was approved (or nothing was), and above a usable cap: a path around the core.
                      // Recorded, so that nothing else is placed on its power, and the face must take it off
                      // (requeue), since keeping it would keep a rack over its usable cap
};
struct StartJudgement {
  StartVerdict verdict = StartVerdict::kWithinCaps;
  absl::Status why;     // OK for kWithinCaps; else the cap check's refusal
  absl::Status record;  // not OK: the ledger could not record the job even over its caps (its GPUs are held by
                        // another allocation, a node it does not know), with why; the previous record stays
};

// Records `running` in the ledger and judges the start. "What was approved" compares the per-node GPU counts and
// the watts per GPU, not the indices: the scheduler may pick other GPUs of the same node, at the same power. A
// job whose record already holds exactly `running` is within caps (a replay).
StartJudgement CommitStartedJob(Ledger& ledger, const Allocation& running, const Allocation* approved);

// Whether two allocations draw the same power in the same places: the same nodes, the same GPU count on each,
// the same watts per GPU.
bool SamePowerFootprint(const Allocation& a, const Allocation& b);

}  // namespace rackwise
