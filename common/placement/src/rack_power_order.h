// Racks ordered by power room, with running counts of their nodes by free GPUs: how many up nodes of a type, with
// at least f free GPUs, sit in racks whose room is below X is one binary search and one read.
//
// Two orders: by each rack's own room, and by the least of its own room and its power chain's (the least room of
// the power domains above it). A refusal's count of nodes short of power is three reads from them: short of the
// rack's own room; short of either (the difference is what the power domains above block); and all. The placer's
// indexes rebuild it when first asked after a change (power_group_index.h, CountPowerShortNodes): O(racks x node
// types x GPUs per node), with the previous order as the start of the sort, which one change leaves nearly right.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "rackwise/topology.h"

namespace rackwise {

class RackPowerOrder {
 public:
  // One rack's up nodes: `at_least[type * width + f]` counts those of `type` with at least f free GPUs.
  struct RackRow {
    Milliwatts own_room = 0;
    Milliwatts least_room = 0;  // the least of own_room and its power chain's room
    absl::Span<const int> at_least;
  };
  // `rows[r]` for every rack r; each `at_least` holds `types * width` values.
  void Rebuild(absl::Span<const RackRow> rows, int types, int width);

  struct Counts {
    long long below_own = 0;    // in racks whose own room is below the need
    long long below_least = 0;  // in racks whose own or chain room is below it (below_own included)
    long long all = 0;
  };
  // Up nodes of `type` with at least `least` free GPUs (0 <= least < width), by where `need` falls.
  Counts Count(NodeTypeId type, int least, Milliwatts need) const;

  // The orders and running counts against `rows` recounted from scratch (tests, CheckInvariants).
  absl::Status Check(absl::Span<const RackRow> rows) const;

 private:
  struct Order {
    std::vector<RackId> racks;     // ascending by key, ties by id
    std::vector<Milliwatts> keys;  // keys[i]: the key of racks[i]
    // [(i * types + type) * width + f]: the at_least values summed over the first i racks (i = 0..racks)
    std::vector<int> running;
    std::vector<Milliwatts> key_of_rack;  // the sort's keys, by rack id
  };
  void Sort(Order* order, absl::Span<const RackRow> rows, Milliwatts RackRow::*key) const;
  void Accumulate(Order* order, absl::Span<const RackRow> rows) const;
  long long Below(const Order& order, NodeTypeId type, int least, Milliwatts need) const;
  static absl::Status CheckOrder(const Order& order, absl::Span<const RackRow> rows, Milliwatts RackRow::*key,
                                 int row_size);

  int types_ = 0;
  int width_ = 0;
  Order by_own_, by_least_;
};

}  // namespace rackwise
