// Where the shared ledger keeps its allocations: an interface so that the ledger's logic (fencing, reconcile
// diffing) is tested against a fake, and runs against etcd (etcd_ledger_store.h) in the daemon.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace rackwise::ledger {

// One change: put `value` under `owner`, or (no value) delete `owner`.
struct StoreWrite {
  std::string owner;
  std::optional<std::string> value;
};

struct StoredAllocation {
  std::string owner;
  std::string value;  // a serialised v1::Allocation
};

class LedgerStore {
 public:
  virtual ~LedgerStore() = default;
  // Every stored allocation.
  virtual absl::StatusOr<std::vector<StoredAllocation>> LoadAll() = 0;
  // Applies every write at once, and only while this replica still holds the leadership it was fenced with;
  // Unavailable (nothing written) when it does not: another replica may lead, so a client tries the next one.
  // At most max_writes_per_call() writes.
  virtual absl::Status Write(absl::Span<const StoreWrite> writes) = 0;
  virtual size_t max_writes_per_call() const = 0;
};

}  // namespace rackwise::ledger
