// The extender's SharedLedgerGate (k8s_extender/shared_ledger_gate.h) over a LedgerLink with owner prefix
// "k8s/". Here rather than in the extender's library because this library links that one; rackwise-extender
// links both and makes one when the description has a `ledger:` section.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger_link.h"
#include "shared_ledger_gate.h"

namespace rackwise::ledger {

class ExtenderLedgerGate final : public k8s::SharedLedgerGate {
 public:
  // `topology` (built from `description`, which must have a `ledger:` section) must outlive the gate. `log`
  // gets one line on each change of mode.
  static absl::StatusOr<std::unique_ptr<ExtenderLedgerGate>> Create(const Topology& topology,
                                                                    const v1::ClusterDescription& description,
                                                                    LedgerLink::Log log);

  absl::Status ReserveAndCommit(Ledger& local, const std::string& owner, const Allocation& allocation) override;
  void Release(Ledger& local, const std::string& owner, const std::string& local_id) override;
  absl::Status Sync(Ledger& local, const std::vector<k8s::OwnedAllocation>& own, bool reconcile) override;
  bool in_fallback() const override { return link_->mode() == LinkMode::kFallback; }
  std::string fallback_reason() const override { return link_->last_error(); }
  uint64_t fallbacks() const override { return link_->fallbacks(); }

 private:
  explicit ExtenderLedgerGate(std::unique_ptr<LedgerLink> link) : link_(std::move(link)) {}
  std::unique_ptr<LedgerLink> link_;
};

}  // namespace rackwise::ledger
