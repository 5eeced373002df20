// See etcd_ledger_store.h.
#include "etcd_ledger_store.h"

#include "absl/strings/str_cat.h"

namespace rackwise::ledger {

LedgerKeys KeysOfLedger(const std::string& name) {
  const std::string root = absl::StrCat("/rackwise/ledger/", name, "/");
  return {absl::StrCat(root, "leader"), absl::StrCat(root, "alloc/")};
}

absl::StatusOr<std::vector<StoredAllocation>> EtcdLedgerStore::LoadAll() {
  absl::StatusOr<std::vector<EtcdKeyValue>> kvs = client_->GetPrefix(keys_.alloc_prefix);
  if (!kvs.ok()) return kvs.status();
  std::vector<StoredAllocation> out;
  out.reserve(kvs->size());
  for (EtcdKeyValue& kv : *kvs) out.push_back({kv.key.substr(keys_.alloc_prefix.size()), std::move(kv.value)});
  return out;
}

absl::Status EtcdLedgerStore::Write(absl::Span<const StoreWrite> writes) {
  const int64_t fence = fence_.load();
  // Unavailable (see SharedLedger::CheckServingLocked): this replica cannot write, another may.
  if (fence == 0) return absl::UnavailableError("not the leader: this replica holds no leader key");
  if (writes.size() > max_txn_ops_)
    return absl::InvalidArgumentError(
        absl::StrCat(writes.size(), " writes in one transaction; at most ", max_txn_ops_));
  if (writes.empty()) return absl::OkStatus();
  std::vector<EtcdWrite> ops;
  ops.reserve(writes.size());
  for (const StoreWrite& w : writes) {
    EtcdWrite op;
    op.key = absl::StrCat(keys_.alloc_prefix, w.owner);
    if (w.value) {
      op.value = *w.value;
    } else {
      op.kind = EtcdWrite::Kind::kDelete;
    }
    ops.push_back(std::move(op));
  }
  const EtcdCompare still_leader{.key = keys_.leader, .create_revision = fence};
  absl::StatusOr<EtcdTxnResult> result = client_->Txn({&still_leader, 1}, ops);
  if (!result.ok()) return result.status();
  if (!result->succeeded)
    return absl::UnavailableError(absl::StrCat("fenced: the leader key ", keys_.leader,
                                               " is no longer the one this replica created at revision ", fence,
                                               " (its lease expired or another replica leads)"));
  return absl::OkStatus();
}

}  // namespace rackwise::ledger
