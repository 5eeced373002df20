// See oversubscribed_allocations.h.
#include "rackwise/oversubscribed_allocations.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace rackwise {

void OversubscribedAllocations::Placed(const std::string& id, const OversubscribedWatts& count) {
  if (!count.applied) {
    Forget(id);
    return;
  }
  const OversubscribedAllocation entry{WattsToMilliwatts(count.declared_watts_per_gpu),
                                       WattsToMilliwatts(count.counted_watts_per_gpu)};
  if (entry.counted >= entry.declared) {  // a share that rounds to nothing counts as declared
    Forget(id);
    return;
  }
  auto [it, added] = by_id_.try_emplace(id, entry);
  if (!added && it->second == entry) return;
  it->second = entry;
  changed_ = true;
}

void OversubscribedAllocations::Retain(absl::FunctionRef<bool(const std::string&)> keep) {
  changed_ |= absl::erase_if(by_id_, [&](const auto& entry) { return !keep(entry.first); }) > 0;
}

const OversubscribedAllocation* OversubscribedAllocations::Find(const std::string& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

Milliwatts OversubscribedAllocations::Counted(const std::string& id, Milliwatts job_watts) const {
  const OversubscribedAllocation* entry = Find(id);
  if (entry == nullptr || (job_watts != 0 && job_watts != entry->declared)) return job_watts;
  return entry->counted;
}

void OversubscribedAllocations::AddDeclaredTo(SteeringFacts* facts) const {
  for (const auto& [id, entry] : by_id_) facts->declared[id] = entry.declared;
}

void OversubscribedAllocations::AddTo(v1::ClusterState* state) const {
  std::vector<const std::string*> ids;
  ids.reserve(by_id_.size());
  for (const auto& [id, entry] : by_id_) ids.push_back(&id);
  std::sort(ids.begin(), ids.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  for (const std::string* id : ids) {
    const OversubscribedAllocation& entry = by_id_.at(*id);
    v1::OversubscribedAllocation* out = state->add_oversubscribed();
    out->set_id(*id);
    out->set_declared_watts_per_gpu(MilliwattsToWatts(entry.declared));
    out->set_counted_watts_per_gpu(MilliwattsToWatts(entry.counted));
  }
}

void OversubscribedAllocations::Restore(const v1::ClusterState& state) {
  by_id_.clear();
  for (const v1::OversubscribedAllocation& o : state.oversubscribed()) {
    const OversubscribedAllocation entry{WattsToMilliwatts(o.declared_watts_per_gpu()),
                                         WattsToMilliwatts(o.counted_watts_per_gpu())};
    // The state file's checker refuses anything else; a state built in memory is held to the same.
    if (!o.id().empty() && entry.counted > 0 && entry.counted < entry.declared) by_id_[o.id()] = entry;
  }
  changed_ = false;
}

}  // namespace rackwise
