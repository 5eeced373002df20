// Racks ordered by power room with running node counts. See rack_power_order.h.
#include "rack_power_order.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace rackwise {
namespace {

// Past this many moves per rack, the insertion sort gives way to a full sort: a change of a high power domain's
// room can reorder most racks of the second order at once.
constexpr size_t kMovesPerRackBeforeFullSort = 8;

}  // namespace

void RackPowerOrder::Rebuild(absl::Span<const RackRow> rows, int types, int width) {
  types_ = types;
  width_ = width;
  Sort(&by_own_, rows, &RackRow::own_room);
  Sort(&by_least_, rows, &RackRow::least_room);
  Accumulate(&by_own_, rows);
  Accumulate(&by_least_, rows);
}

void RackPowerOrder::Sort(Order* order, absl::Span<const RackRow> rows, Milliwatts RackRow::*key) const {
  std::vector<RackId>& racks = order->racks;
  // First build (or another cluster): no previous order to start from, so a full sort at once.
  const bool first = racks.size() != rows.size();
  if (first) {
    racks.resize(rows.size());
    std::iota(racks.begin(), racks.end(), 0);
  }
  std::vector<Milliwatts>& key_of = order->key_of_rack;  // by rack id: the compares read one array
  key_of.resize(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) key_of[r] = rows[r].*key;
  auto before = [&key_of](RackId a, RackId b) { return key_of[a] != key_of[b] ? key_of[a] < key_of[b] : a < b; };
  // The previous order, with a few racks moved since: insertion sort is O(racks + moves) on it.
  const size_t budget = kMovesPerRackBeforeFullSort * racks.size();
  size_t moves = first ? budget + 1 : 0;
  for (size_t i = 1; i < racks.size() && moves <= budget; ++i) {
    const RackId moving = racks[i];
    size_t j = i;
    for (; j > 0 && before(moving, racks[j - 1]); --j) racks[j] = racks[j - 1];
    racks[j] = moving;
    moves += i - j;
  }
  if (moves > budget) std::sort(racks.begin(), racks.end(), before);
  order->keys.resize(racks.size());
  for (size_t i = 0; i < racks.size(); ++i) order->keys[i] = key_of[racks[i]];
}

void RackPowerOrder::Accumulate(Order* order, absl::Span<const RackRow> rows) const {
  const size_t row_size = static_cast<size_t>(types_) * width_;
  std::vector<int>& running = order->running;
  running.resize((order->racks.size() + 1) * row_size);
  std::fill_n(running.begin(), row_size, 0);
  int* next = running.data() + row_size;
  for (const RackId r : order->racks) {
    const int* add = rows[r].at_least.data();
    const int* previous = next - row_size;
    for (size_t v = 0; v < row_size; ++v) next[v] = previous[v] + add[v];
    next += row_size;
  }
}

long long RackPowerOrder::Below(const Order& order, NodeTypeId type, int least, Milliwatts need) const {
  const size_t i = std::lower_bound(order.keys.begin(), order.keys.end(), need) - order.keys.begin();
  return order.running[(i * types_ + type) * width_ + least];
}

RackPowerOrder::Counts RackPowerOrder::Count(NodeTypeId type, int least, Milliwatts need) const {
  Counts out;
  if (type < 0 || type >= types_ || least < 0 || least >= width_) return out;
  out.below_own = Below(by_own_, type, least, need);
  out.below_least = Below(by_least_, type, least, need);
  out.all = by_own_.running[(by_own_.racks.size() * types_ + type) * width_ + least];
  return out;
}

absl::Status RackPowerOrder::CheckOrder(const Order& order, absl::Span<const RackRow> rows, Milliwatts RackRow::*key,
                                        int row_size) {
  if (order.racks.size() != rows.size() || order.keys.size() != rows.size())
    return absl::InternalError("rack power order: not every rack is in it");
  std::vector<char> seen(rows.size(), 0);
  std::vector<long long> sum(row_size, 0);
  for (size_t i = 0; i < order.racks.size(); ++i) {
    const RackId r = order.racks[i];
    if (r < 0 || static_cast<size_t>(r) >= rows.size() || seen[r]++)
      return absl::InternalError(absl::StrCat("rack power order: rack ", r, " missing or twice"));
    if (order.keys[i] != rows[r].*key) return absl::InternalError(absl::StrCat("rack power order: rack ", r, " stale"));
    if (i > 0 && order.keys[i] < order.keys[i - 1])
      return absl::InternalError(absl::StrCat("rack power order: out of order at ", i));
    for (int v = 0; v < row_size; ++v) {
      if (order.running[i * row_size + v] != sum[v])
        return absl::InternalError(absl::StrCat("rack power order: running count stale before position ", i));
      sum[v] += rows[r].at_least[v];
    }
  }
  for (int v = 0; v < row_size; ++v)
    if (order.running[order.racks.size() * row_size + v] != sum[v])
      return absl::InternalError("rack power order: total stale");
  return absl::OkStatus();
}

absl::Status RackPowerOrder::Check(absl::Span<const RackRow> rows) const {
  const int row_size = types_ * width_;
  if (absl::Status s = CheckOrder(by_own_, rows, &RackRow::own_room, row_size); !s.ok()) return s;
  return CheckOrder(by_least_, rows, &RackRow::least_room, row_size);
}

}  // namespace rackwise
