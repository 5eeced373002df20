// A LedgerStore in memory for the ledger service's unit tests: no etcd.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ledger_store.h"

namespace rackwise::ledger::testing {

// Keeps what it is given in a map; can be fenced out (as a deposed leader is) or made to fail one write.
class FakeStore : public LedgerStore {
 public:
  absl::StatusOr<std::vector<StoredAllocation>> LoadAll() override {
    std::vector<StoredAllocation> out;
    for (const auto& [owner, value] : data) out.push_back({owner, value});
    return out;
  }
  absl::Status Write(absl::Span<const StoreWrite> writes) override {
    if (fenced_out) return absl::UnavailableError("fenced: another replica leads");
    if (writes.size() > max_writes) return absl::InvalidArgumentError("too many writes in one call");
    if (fail_write == write_calls++) return absl::UnavailableError("etcd unreachable");
    for (const StoreWrite& w : writes) {
      if (w.value) {
        data[w.owner] = *w.value;
      } else {
        data.erase(w.owner);
      }
    }
    return absl::OkStatus();
  }
  size_t max_writes_per_call() const override { return max_writes; }

  std::map<std::string, std::string> data;
  bool fenced_out = false;
  size_t max_writes = 4;
  int write_calls = 0;
  int fail_write = -1;  // the index of the call to fail
};

}  // namespace rackwise::ledger::testing
