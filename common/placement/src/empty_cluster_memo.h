// Internal to the placer: what a request shape could get on the cluster as described, empty and healthy (the
// greedy bound and the exact fewest NVLink domains). Both are functions of the description and the shape alone,
// yet the exact search costs O(domains log domains) with allocations (about 0.5 ms at 131k GPUs) and every
// decision and refusal of that shape asks again, so they are worked out once per shape. Owned by the ledger,
// shared by its copies (same description); thread-safe, since copies may live on other threads.
#pragma once

#include <cstddef>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "fewest_domains.h"
#include "rackwise/topology.h"

namespace rackwise::internal {

class EmptyClusterMemo {
 public:
  // A shape: everything the empty-cluster figures depend on besides the description (requests with a node list
  // are not kept: their figures depend on the list).
  struct Shape {
    NodeTypeId type = kNoId;
    int gpus = 0;
    int gpus_per_node = 0;
    int granule = 1;
    Milliwatts per_gpu = 0;
    friend bool operator==(const Shape&, const Shape&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const Shape& s) {
      return H::combine(std::move(h), s.type, s.gpus, s.gpus_per_node, s.granule, s.per_gpu);
    }
  };
  struct Figures {
    std::optional<int> greedy_domains;  // largest rooms first (kUnlimited: they do not reach the job)
    std::optional<FewestDomains> fewest;
  };

  Figures Find(const Shape& shape) const;
  void KeepGreedy(const Shape& shape, int domains);
  void KeepFewest(const Shape& shape, const FewestDomains& fewest);

 private:
  static constexpr size_t kMaxShapes = 4096;  // a cache: cleared when full
  Figures& SlotLocked(const Shape& shape) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<Shape, Figures> figures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rackwise::internal
