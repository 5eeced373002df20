// See start_guard.h.
#include "rackwise/start_guard.h"

#include "absl/strings/str_cat.h"

namespace rackwise {

absl::Status CommitWithinUsableCaps(Ledger& ledger, const Allocation& allocation) {
  if (const Allocation* held = ledger.Find(allocation.id); held && *held == allocation) return absl::OkStatus();
  if (absl::Status s = CheckWithinUsableCaps(ledger, allocation); !s.ok()) return s;
  return ledger.Commit(allocation, CommitMode::kEnforce);
}

absl::Status CheckWithinUsableCaps(const Ledger& ledger, const Allocation& allocation) {
  if (ledger.Find(allocation.id) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("allocation ", allocation.id, " is already held"));
  }
  return ledger.Check(allocation, CommitMode::kEnforce, ledger.topology().policy().power_reserve_fraction);
}

}  // namespace rackwise
