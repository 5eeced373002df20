// The best of n values under point updates: O(log n) per update, O(1) to ask. The ledger keeps the least room of
// any rack and of any power domain, and the most free GPUs in one rack, this way, so that a refusal or a capacity
// bound can tell in O(1) that power binds nowhere instead of passing over every power group.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace rackwise {

// `Better(a, b)`: a is kept over b (std::less<T> keeps the least). `none` is the answer for no values, and fills
// the unused leaves; it must lose against every value (for the least: the largest T).
template <typename T, typename Better>
class TournamentTree {
 public:
  explicit TournamentTree(T none) : none_(none) {}

  // n values, every one `none`.
  void Assign(size_t n) {
    leaves_ = 1;
    while (leaves_ < n) leaves_ *= 2;
    size_ = n;
    node_.assign(2 * leaves_, none_);
  }
  void Set(size_t i, T value) {
    size_t at = leaves_ + i;
    node_[at] = value;
    for (at /= 2; at >= 1; at /= 2) node_[at] = Pick(node_[2 * at], node_[2 * at + 1]);
  }
  T Top() const { return size_ == 0 ? none_ : node_[1]; }
  T at(size_t i) const { return node_[leaves_ + i]; }
  size_t size() const { return size_; }

 private:
  static T Pick(T a, T b) { return Better()(b, a) ? b : a; }

  T none_;
  size_t leaves_ = 0;
  size_t size_ = 0;
  std::vector<T> node_;  // node_[1] the root; the values at [leaves_, leaves_ + size_)
};

}  // namespace rackwise
