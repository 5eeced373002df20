// The shared ledger's allocations in etcd: one key per owner under "/rackwise/ledger/<name>/alloc/", every
// write one transaction fenced on leadership. The fence is the create_revision of the leader key that this
// replica created when it won the election: a replica that lost its lease (the key expired, or another replica
// created it anew) fails the compare, so a deposed leader cannot write even if it has not noticed yet.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "etcd_client.h"
#include "ledger_store.h"

namespace rackwise::ledger {

// The keys of one ledger, named by --name.
struct LedgerKeys {
  std::string leader;        // "/rackwise/ledger/<name>/leader"
  std::string alloc_prefix;  // "/rackwise/ledger/<name>/alloc/"
};
LedgerKeys KeysOfLedger(const std::string& name);

class EtcdLedgerStore : public LedgerStore {
 public:
  // etcd's default --max-txn-ops.
  static constexpr size_t kDefaultMaxTxnOps = 128;

  // `client` must outlive the store. `max_txn_ops` must not exceed etcd's --max-txn-ops (etcd refuses larger
  // transactions); fewer, larger transactions make a large reconcile faster (one fsync each).
  EtcdLedgerStore(EtcdClient* client, LedgerKeys keys, size_t max_txn_ops = kDefaultMaxTxnOps)
      : client_(client), keys_(std::move(keys)), max_txn_ops_(max_txn_ops) {}

  // Set when this replica wins the election (the leader key's create_revision); 0: not the leader, every write
  // is refused without asking etcd.
  void SetFence(int64_t leader_create_revision) { fence_.store(leader_create_revision); }

  absl::StatusOr<std::vector<StoredAllocation>> LoadAll() override;
  absl::Status Write(absl::Span<const StoreWrite> writes) override;
  size_t max_writes_per_call() const override { return max_txn_ops_; }

 private:
  EtcdClient* client_;
  LedgerKeys keys_;
  size_t max_txn_ops_;
  std::atomic<int64_t> fence_{0};
};

}  // namespace rackwise::ledger
