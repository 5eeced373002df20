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

}  // namespace rackwise
