// What a face remembers of the allocations a placement counted at less than their job declared
// (policy.oversubscribe_pct, oversubscription.h): per allocation id, the declared watts per GPU (the GPUs' limit,
// which steering raises limits back to and never above) and the counted ones (what its ledger holds). The face
// passes the declared watts to steering (SteeringFacts::declared), publishes them as the GPUs' limit, and saves
// the book in its state (v1::ClusterState::oversubscribed) so that after a restart its ledger counts what it
// counted before. Bookkeeping only: whether to count a job at less is CountOversubscribed's to say.
#pragma once

#include <cstddef>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "rackwise/ledger_steering.h"
#include "rackwise/oversubscription.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise {

struct OversubscribedAllocation {
  Milliwatts declared = 0;  // per GPU
  Milliwatts counted = 0;   // per GPU, below `declared`
  friend bool operator==(const OversubscribedAllocation&, const OversubscribedAllocation&) = default;
};

class OversubscribedAllocations {
 public:
  // Allocation `id` placed with `count`: remembered when it was applied, forgotten otherwise.
  void Placed(const std::string& id, const OversubscribedWatts& count);
  void Forget(const std::string& id) { changed_ |= by_id_.erase(id) > 0; }
  // Keeps only the ids `keep` says yes to (after a restart: those still running).
  void Retain(absl::FunctionRef<bool(const std::string&)> keep);

  const OversubscribedAllocation* Find(const std::string& id) const;
  // The watts per GPU to count for `id`, whose job declares `job_watts` (0: its node type's default, what the face
  // would count without oversubscription): the counted watts when it was placed oversubscribed with those
  // declared watts, else `job_watts`. A job whose declared watts changed since counts what it declares now.
  Milliwatts Counted(const std::string& id, Milliwatts job_watts) const;
  // Steering's facts: every remembered allocation's declared watts.
  void AddDeclaredTo(SteeringFacts* facts) const;

  // The state form (sorted by id), and back: Restore replaces the book with the state's entries.
  void AddTo(v1::ClusterState* state) const;
  void Restore(const v1::ClusterState& state);

  size_t size() const { return by_id_.size(); }
  // Whether the book changed since the last call (a face saving it on a beat); MarkChanged after a failed save.
  bool TakeChanged() {
    const bool was = changed_;
    changed_ = false;
    return was;
  }
  void MarkChanged() { changed_ = true; }

 private:
  absl::flat_hash_map<std::string, OversubscribedAllocation> by_id_;
  bool changed_ = false;
};

}  // namespace rackwise
