// See empty_cluster_memo.h.
#include "empty_cluster_memo.h"

namespace rackwise::internal {

EmptyClusterMemo::Figures EmptyClusterMemo::Find(const Shape& shape) const {
  absl::MutexLock lock(&mu_);
  auto it = figures_.find(shape);
  return it == figures_.end() ? Figures{} : it->second;
}

EmptyClusterMemo::Figures& EmptyClusterMemo::SlotLocked(const Shape& shape) {
  if (figures_.size() >= kMaxShapes && !figures_.contains(shape)) figures_.clear();
  return figures_[shape];
}

void EmptyClusterMemo::KeepGreedy(const Shape& shape, int domains) {
  absl::MutexLock lock(&mu_);
  SlotLocked(shape).greedy_domains = domains;
}

void EmptyClusterMemo::KeepFewest(const Shape& shape, const FewestDomains& fewest) {
  absl::MutexLock lock(&mu_);
  SlotLocked(shape).fewest = fewest;
}

}  // namespace rackwise::internal
