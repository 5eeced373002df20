// A map from small dense ids (racks, scalable units) to values, emptied in O(1) between uses.
//
// A multi-domain search tallies a few dozen racks out of thousands. Zeroing an array over every rack for each
// decision cost more than the search (1,821 racks at 131k GPUs), and a hash map costs a hash and a probe on every
// access (a tenth of a 144-GPU decision). Here each slot remembers the use (epoch) it was last written in, so
// starting a new use is one increment, and an access is an index and a compare.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rackwise::internal {

// `Epoch`: any unsigned integer type (narrow ones let a test reach the wrap-around).
template <typename Value, typename Epoch = uint32_t>
class StampedMap {
 public:
  // Empties the map for ids in [0, ids): every value reads as Value{} until written.
  void Reset(size_t ids) {
    if (slots_.size() < ids) slots_.resize(ids);  // new slots carry epoch 0, never a live one
    if (++epoch_ == 0) {  // wrapped: restamp every slot rather than read one from an old use as live
      for (Slot& s : slots_) s.epoch = 0;
      epoch_ = 1;
    }
    keys_.clear();
  }

  // The value for `id` (inserted as Value{} when absent). `id` must be below Reset's `ids`.
  // The first touch of an id in a use is out of line, so that the usual access inlines to an index and a compare.
  Value& operator[](int id) {
    Slot& s = slots_[static_cast<size_t>(id)];
    if (s.epoch != epoch_) [[unlikely]]
      Insert(s, id);
    return s.value;
  }

  // The ids present, in the order they were first written.
  const std::vector<int>& keys() const { return keys_; }
  size_t size() const { return keys_.size(); }

 private:
  struct Slot {
    Epoch epoch = 0;
    Value value{};
  };
  [[gnu::noinline]] void Insert(Slot& s, int id) {
    s.epoch = epoch_;
    s.value = Value{};
    keys_.push_back(id);
  }
  std::vector<Slot> slots_;
  std::vector<int> keys_;
  Epoch epoch_ = 0;
};

}  // namespace rackwise::internal
