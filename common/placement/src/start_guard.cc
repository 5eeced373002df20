// See start_guard.h.
#include "rackwise/start_guard.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rackwise/gpu_mask.h"

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

bool SamePowerFootprint(const Allocation& a, const Allocation& b) {
  if (a.per_gpu != b.per_gpu || a.nodes.size() != b.nodes.size()) return false;
  auto counts = [](const Allocation& x) {
    std::vector<std::pair<NodeId, int>> out;
    out.reserve(x.nodes.size());
    for (const NodeGpus& ng : x.nodes) out.emplace_back(ng.node, GpuCount(ng.gpus));
    std::sort(out.begin(), out.end());
    return out;
  };
  return counts(a) == counts(b);
}

StartJudgement CommitStartedJob(Ledger& ledger, const Allocation& running, const Allocation* approved) {
  StartJudgement judgement;
  judgement.why = CommitWithinUsableCaps(ledger, running);
  if (judgement.why.ok()) return judgement;
  // Over a usable cap: what runs is recorded all the same (nothing new may be placed on that power).
  judgement.record = ledger.Commit(running, CommitMode::kRecover);
  judgement.verdict = approved && SamePowerFootprint(*approved, running) ? StartVerdict::kLedgerMovedSince
                                                                         : StartVerdict::kOutsidePlacement;
  return judgement;
}

}  // namespace rackwise
