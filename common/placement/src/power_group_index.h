// Internal to the placer: the power groups and the racks' power order, the part of the placer's indexes
// (placement_indexes.h) that answers a refusal's "nodes short of power" without a pass over every rack.
// PlacementIndexes owns one and forwards its questions to it, passing what it keeps of the ledger (KeptRoomsAndTallies,
// below): each rack's node tallies and own room, each power domain's own room. The power groups read those and
// nothing else of the ledger; they hold no pointer to them, so that a copy of the indexes (a copy of the ledger)
// is a plain member-wise copy.
//
// What is kept, and why:
// - Power groups, the racks under one power domain (or under none) by their own room, with running sums of their
//   node tallies (power_group_index.cc): a refusal counts nodes per reason group by group instead of rack by rack,
//   one binary search per group.
// - The racks ordered by room (rack_power_order.h) and each power domain's chain room (power_group_index_order.cc):
//   a refusal's count of nodes short of power in O(log racks) once a state is asked often.
// Both are stale after a change and brought up to date when first asked: a change marks the rack's group stale
// (RackChanged) or moves the generation (SetGeneration); the simulator's backfill commits and releases thousands
// of times on scratch ledgers that never ask. Not thread-safe, queries included, as the ledger.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "rack_power_order.h"
#include "rackwise/topology.h"

namespace rackwise::internal {

// The nodes of one node type in one rack (or the cluster), by state.
struct RackTypeTally {
  NodeTypeId type = kNoId;
  int nodes = 0;
  int down = 0;
  int drained = 0;
  std::vector<int> up_by_free;  // [f]: up nodes with exactly f free GPUs
  long long up_free_gpus = 0;   // free GPUs on up nodes
};

// What the placer's indexes keep per rack and power domain, kept current by PlacementIndexes on every change the
// ledger records, and read (never written) by the power groups.
struct KeptRoomsAndTallies {
  // [rack]: one entry per node type present in the rack, in the order the types first appear among its nodes.
  std::vector<std::vector<RackTypeTally>> rack_tallies;
  std::vector<Milliwatts> rack_room;  // [rack]: its own room, the policy's reserve kept
  std::vector<Milliwatts> pd_room;    // [power domain]: its own room, the policy's reserve kept
  std::vector<RackId> root_racks;     // racks under no power domain

  int RackFreeGpus(RackId rack) const {  // free GPUs on the rack's up nodes
    long long free = 0;
    for (const RackTypeTally& tally : rack_tallies[rack]) free += tally.up_free_gpus;
    return static_cast<int>(free);
  }
};

class PowerGroupIndex {
 public:
  // The least rack room of a group without racks (GroupLeastRackRoom): below any room.
  static constexpr Milliwatts kNoRack = std::numeric_limits<Milliwatts>::min();

  PowerGroupIndex() = default;
  // Lays out each group's racks and node types, and room for its running sums, from `kept`'s tallies and root
  // racks (not its rooms, which may not be filled yet); every group is stale. `generation` is the ledger's.
  PowerGroupIndex(const Topology& topology, const KeptRoomsAndTallies& kept, uint64_t generation);

  // ---- Kept current by PlacementIndexes ----
  // The ledger's generation, which dates the figures worked out when first asked (ChainRooms, the power order).
  void SetGeneration(uint64_t generation) { generation_ = generation; }
  // A rack's room or tallies moved: its group is refreshed when next asked.
  void RackChanged(RackId rack) {
    if (!groups_.empty()) group_stale_[GroupOf(rack)] = 1;
  }
  // Every rack's room may have moved (a round of measured draws).
  void AllRacksChanged() { std::fill(group_stale_.begin(), group_stale_.end(), 1); }
  // Every group and the power order against a count from scratch over `kept`; the first inconsistency.
  absl::Status Check(const KeptRoomsAndTallies& kept) const;

  // ---- Power groups: the racks directly under one power domain, or (kNoId) the racks under none ----
  // Every query takes `kept`, as it stands, to refresh what is stale.
  const std::vector<RackId>& GroupRacks(const KeptRoomsAndTallies& kept, PowerDomainId group) const {
    return group == kNoId ? kept.root_racks : topology_->power_domains()[group].racks;
  }
  // The lowest rack id of the group (kNoId when it has none), from a dense array: a refusal asks it of every
  // group, and reading each group's own list for it cost a cache miss per group.
  RackId GroupFirstRack(PowerDomainId group) const { return group_first_rack_[GroupIndex(group)]; }
  // Up nodes of `type` with at least `least` free GPUs in the group: all of them, and those in racks whose own
  // room (the policy's reserve kept) is below `room`. O(log racks in the group + GPUs per node).
  struct GroupNodes {
    int all = 0;
    int below_room = 0;
  };
  GroupNodes GroupNodesWithFree(const KeptRoomsAndTallies& kept, PowerDomainId group, NodeTypeId type, int least,
                                Milliwatts room) const;
  // The same racks' up nodes of `type` by free GPU count ([f]: nodes with exactly f free); empty when the group
  // has no node of the type.
  absl::Span<const int> GroupFreeHistogram(const KeptRoomsAndTallies& kept, PowerDomainId group, NodeTypeId type,
                                           Milliwatts room) const;
  // The least own room (the policy's reserve kept) of the group's racks; kNoRack for an empty group.
  // Inline with GroupMaxRackFree: a refusal's power sentence asks both of every group.
  Milliwatts GroupLeastRackRoom(const KeptRoomsAndTallies& kept, PowerDomainId group) const {
    return group_least_room_[FreshGroupIndex(kept, group)];
  }
  // The most free GPUs (up nodes, every type) in one rack of the group: a bound for scans after such racks.
  int GroupMaxRackFree(const KeptRoomsAndTallies& kept, PowerDomainId group) const {
    return group_max_rack_free_[FreshGroupIndex(kept, group)];
  }

  // ---- The racks' power order and the power chains' rooms (power_group_index_order.cc) ----
  // For a refusal's node tally, over the whole cluster: up nodes of `type` with at least `least` free GPUs in
  // racks whose own room (the policy's reserve kept) is below `need` (rack_short); of the others, those whose
  // power chain's room (ChainRooms) is below `need` (chain_short); and the rest (powered). A pass over the power
  // groups, O(power groups); once asked kAsksBeforePowerOrder times at one state (a scheduling pass that refuses
  // many pending jobs between two changes), O(log racks) from the racks ordered by room (rack_power_order.h),
  // built then for that state (ski rental: a stream where every refusal follows a change keeps the passes; a state
  // asked often pays the pass only until the order is bought). A build starts from the previous order; the first
  // one of a ledger is a full sort, a few times dearer than the 16 passes.
  struct PowerShortNodes {
    long long rack_short = 0;
    long long chain_short = 0;
    long long powered = 0;
  };
  PowerShortNodes CountPowerShortNodes(const KeptRoomsAndTallies& kept, NodeTypeId type, int least,
                                       Milliwatts need) const;
  static constexpr int kAsksBeforePowerOrder = 16;
  // Per power domain, the least room (the policy's reserve kept) of it and of every power domain above it. Worked
  // out when first asked after a change, O(power domains).
  absl::Span<const Milliwatts> ChainRooms(const KeptRoomsAndTallies& kept) const;

 private:
  const Topology* topology_ = nullptr;
  uint64_t generation_ = 0;  // the ledger's, see SetGeneration

  struct Group {
    std::vector<RackId> by_room;    // the group's racks by kept room, ascending (ties by id)
    std::vector<NodeTypeId> types;  // node types present in the group
    // [type slot][i * (gpus + 1) + f]: up nodes of that type with exactly f free GPUs among the first i racks of
    // by_room, so that "nodes with room below X" is one binary search and a few sums.
    std::vector<std::vector<int>> cumulative;
    // The same rows as suffix sums over f ([type slot][i * (gpus + 1) + f]: nodes with at least f free GPUs among
    // the first i racks), and each of by_room's kept room in order: a refusal's count over every group then reads
    // one value per group instead of summing a row behind an indirection.
    std::vector<std::vector<int>> at_least;
    std::vector<Milliwatts> rooms;
  };
  // One per power domain, then one for the racks under none. Brought up to date when first asked after a change
  // (group_stale_), so a const query may write here.
  mutable std::vector<Group> groups_;
  mutable std::vector<char> group_stale_;
  mutable std::vector<int> group_max_rack_free_;  // per group: the most free GPUs (up nodes) in one of its racks
  // Dense over the groups, so that a refusal's pass over every group reads a few contiguous values per group
  // instead of each group's own arrays: its least kept rack room (kNoRack when it has no rack), and
  // [(group * types + type) * group_width_ + least]: its up nodes of the type with at least `least` free GPUs.
  std::vector<RackId> group_first_rack_;
  mutable std::vector<Milliwatts> group_least_room_;
  mutable std::vector<int> group_at_least_;
  size_t group_width_ = 0;                     // the most GPUs of any node type, plus one
  int GroupIndex(PowerDomainId group) const {  // into groups_ (kNoId: the last)
    return group == kNoId ? static_cast<int>(topology_->power_domains().size()) : group;
  }
  // GroupIndex, the group refreshed first if it is stale.
  int FreshGroupIndex(const KeptRoomsAndTallies& kept, PowerDomainId group) const {
    const int index = GroupIndex(group);
    if (group_stale_[index]) RefreshPowerGroup(kept, index);
    return index;
  }
  int GroupOf(RackId rack) const;
  void RefreshPowerGroup(const KeptRoomsAndTallies& kept, int group) const;
  absl::Status CheckPowerGroups(const KeptRoomsAndTallies& kept) const;
  // Up nodes of `type` (at `slot` in the group's types) with at least `least` free GPUs in the group's racks whose
  // own room is below `room`; the group is fresh.
  static int BelowRoomAtLeast(const Group& group, size_t slot, size_t width, int least, Milliwatts room);
  size_t AtLeastIndex(int group, NodeTypeId type) const;  // into group_at_least_ (group: a GroupIndex)
  const Group& FreshGroup(const KeptRoomsAndTallies& kept, PowerDomainId group) const;
  static const std::vector<int>* GroupSums(const Group& group, NodeTypeId type);  // null: no such node
  static size_t RacksBelowRoom(const Group& group, Milliwatts room);              // how many of by_room

  // The racks by room (CountPowerShortNodes), for the generation it was built at, and how often the count was
  // asked at the generation of asks_generation_.
  mutable RackPowerOrder power_order_;
  mutable std::optional<uint64_t> power_order_generation_, asks_generation_, chain_rooms_generation_;
  mutable int asks_ = 0;
  mutable std::vector<Milliwatts> chain_rooms_;    // ChainRooms, for chain_rooms_generation_
  mutable std::vector<int> power_order_at_least_;  // the racks' rows for the build, [rack][type * width + f]
  mutable std::vector<RackPowerOrder::RackRow> power_order_rows_;
  const RackPowerOrder& FreshPowerOrder(const KeptRoomsAndTallies& kept) const;
  PowerShortNodes CountPowerShortNodesByGroup(const KeptRoomsAndTallies& kept, NodeTypeId type, int least,
                                              Milliwatts need) const;
  void BuildPowerOrderRows(const KeptRoomsAndTallies& kept) const;  // the racks' rows, from `kept` as it is
  absl::Status CheckPowerOrder(const KeptRoomsAndTallies& kept) const;
};

}  // namespace rackwise::internal
