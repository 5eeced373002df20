// The placer's power groups: per power domain, its racks ordered by their own room with running sums of their
// node tallies, so that a refusal counts "nodes short of rack power" with one binary search per group instead of
// a look at every rack. See GroupNodesWithFree in power_group_index.h.
//
// A change to one rack (its room, or a node's free GPUs or health) marks its group stale; the next question about
// the group refreshes it: O(racks in the group x GPUs per node), a handful of racks under a row. Racks under no
// power domain form one group, so a cluster described without power domains pays O(racks) per refresh there.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "power_group_index.h"

namespace rackwise::internal {

int PowerGroupIndex::GroupOf(RackId rack) const { return GroupIndex(topology_->racks()[rack].power_domain); }

PowerGroupIndex::PowerGroupIndex(const Topology& topology, const KeptRoomsAndTallies& kept, uint64_t generation)
    : topology_(&topology), generation_(generation) {
  const Topology& t = topology;
  groups_.resize(t.power_domains().size() + 1);
  group_stale_.assign(groups_.size(), 1);  // filled when first asked
  group_max_rack_free_.assign(groups_.size(), 0);
  group_least_room_.assign(groups_.size(), kNoRack);
  group_first_rack_.assign(groups_.size(), kNoId);
  group_width_ = 1;
  for (const NodeType& type : t.node_types()) group_width_ = std::max<size_t>(group_width_, type.gpus + 1);
  group_at_least_.assign(groups_.size() * t.node_types().size() * group_width_, 0);
  for (int group = 0; group < static_cast<int>(groups_.size()); ++group) {
    Group& g = groups_[group];
    g.by_room = GroupRacks(kept, group == static_cast<int>(t.power_domains().size()) ? kNoId : group);
    if (!g.by_room.empty()) group_first_rack_[group] = *std::min_element(g.by_room.begin(), g.by_room.end());
    for (RackId r : g.by_room)
      for (const RackTypeTally& tally : kept.rack_tallies[r])
        if (std::find(g.types.begin(), g.types.end(), tally.type) == g.types.end()) g.types.push_back(tally.type);
    g.cumulative.resize(g.types.size());
    for (size_t slot = 0; slot < g.types.size(); ++slot)
      g.cumulative[slot].assign((g.by_room.size() + 1) * (t.node_types()[g.types[slot]].gpus + 1), 0);
    g.at_least = g.cumulative;
    g.rooms.assign(g.by_room.size(), 0);
  }
}

const PowerGroupIndex::Group& PowerGroupIndex::FreshGroup(const KeptRoomsAndTallies& kept, PowerDomainId group) const {
  return groups_[FreshGroupIndex(kept, group)];
}

const std::vector<int>* PowerGroupIndex::GroupSums(const Group& g, NodeTypeId type) {
  const auto slot = std::find(g.types.begin(), g.types.end(), type);
  return slot == g.types.end() ? nullptr : &g.cumulative[slot - g.types.begin()];
}

// In place, without allocating. Done when a group is first asked after a change, not on the change: the
// simulator's backfill commits and releases on scratch ledgers that never ask.
void PowerGroupIndex::RefreshPowerGroup(const KeptRoomsAndTallies& kept, int group) const {
  Group& g = groups_[group];
  group_stale_[group] = 0;
  auto before = [&](RackId a, RackId b) {
    return kept.rack_room[a] != kept.rack_room[b] ? kept.rack_room[a] < kept.rack_room[b] : a < b;
  };
  // Insertion sort: one rack moved since the last refresh, so the order is nearly right.
  for (size_t i = 1; i < g.by_room.size(); ++i)
    for (size_t j = i; j > 0 && before(g.by_room[j], g.by_room[j - 1]); --j) std::swap(g.by_room[j], g.by_room[j - 1]);
  for (size_t slot = 0; slot < g.types.size(); ++slot) {
    const size_t width = topology_->node_types()[g.types[slot]].gpus + 1;
    std::vector<int>& sums = g.cumulative[slot];  // row 0 stays all zeros
    std::vector<int>& at_least = g.at_least[slot];
    for (size_t i = 0; i < g.by_room.size(); ++i) {
      const int* previous = &sums[i * width];
      int* row = &sums[(i + 1) * width];
      std::copy_n(previous, width, row);
      for (const RackTypeTally& tally : kept.rack_tallies[g.by_room[i]]) {
        if (tally.type != g.types[slot]) continue;
        for (size_t f = 0; f < width; ++f) row[f] += tally.up_by_free[f];
      }
      int running = 0;
      for (size_t f = width; f-- > 0;) at_least[(i + 1) * width + f] = running += row[f];
    }
  }
  for (size_t i = 0; i < g.by_room.size(); ++i) g.rooms[i] = kept.rack_room[g.by_room[i]];
  int most_free = 0;
  for (RackId r : g.by_room) most_free = std::max(most_free, kept.RackFreeGpus(r));
  group_max_rack_free_[group] = most_free;
  group_least_room_[group] = g.by_room.empty() ? kNoRack : kept.rack_room[g.by_room.front()];
  for (size_t slot = 0; slot < g.types.size(); ++slot) {
    const size_t width = topology_->node_types()[g.types[slot]].gpus + 1;
    const int* all = &g.cumulative[slot][g.by_room.size() * width];
    int* at_least = &group_at_least_[AtLeastIndex(group, g.types[slot])];
    int running = 0;
    for (size_t f = width; f-- > 0;) at_least[f] = running += all[f];
  }
}

size_t PowerGroupIndex::AtLeastIndex(int group, NodeTypeId type) const {
  return (static_cast<size_t>(group) * topology_->node_types().size() + type) * group_width_;
}

size_t PowerGroupIndex::RacksBelowRoom(const Group& g, Milliwatts room) {
  // Every rack below the room, or none, without the search: the usual answers on uncapped or full clusters.
  if (g.rooms.empty() || g.rooms.front() >= room) return 0;
  if (g.rooms.back() < room) return g.rooms.size();
  return std::partition_point(g.rooms.begin(), g.rooms.end(), [&](Milliwatts r) { return r < room; }) - g.rooms.begin();
}

absl::Span<const int> PowerGroupIndex::GroupFreeHistogram(const KeptRoomsAndTallies& kept, PowerDomainId group,
                                                          NodeTypeId type, Milliwatts room) const {
  const Group& g = FreshGroup(kept, group);
  const std::vector<int>* sums = GroupSums(g, type);
  if (sums == nullptr) return {};
  const size_t width = topology_->node_types()[type].gpus + 1;
  return absl::MakeConstSpan(*sums).subspan(RacksBelowRoom(g, room) * width, width);
}

PowerGroupIndex::GroupNodes PowerGroupIndex::GroupNodesWithFree(const KeptRoomsAndTallies& kept, PowerDomainId group,
                                                                NodeTypeId type, int least, Milliwatts room) const {
  const Group& g = FreshGroup(kept, group);
  const int index = GroupIndex(group);
  GroupNodes out;
  const size_t width = topology_->node_types()[type].gpus + 1;
  if (static_cast<size_t>(std::max(least, 0)) >= width) return out;
  // From the dense arrays: every group is asked, and most have no node that fits or no rack short of the room.
  out.all = group_at_least_[AtLeastIndex(index, type) + std::max(least, 0)];
  if (out.all == 0 || group_least_room_[index] >= room) return out;
  const auto slot = std::find(g.types.begin(), g.types.end(), type);
  if (slot == g.types.end()) return out;  // cannot be: a type with nodes in the group has its sums
  out.below_room = BelowRoomAtLeast(g, slot - g.types.begin(), width, std::max(least, 0), room);
  return out;
}

int PowerGroupIndex::BelowRoomAtLeast(const Group& group, size_t slot, size_t width, int least, Milliwatts room) {
  return group.at_least[slot][RacksBelowRoom(group, room) * width + least];
}

PowerGroupIndex::PowerShortNodes PowerGroupIndex::CountPowerShortNodesByGroup(const KeptRoomsAndTallies& kept,
                                                                              NodeTypeId type, int least,
                                                                              Milliwatts need) const {
  PowerShortNodes out;
  const size_t width = topology_->node_types()[type].gpus + 1;
  least = std::max(least, 0);
  if (static_cast<size_t>(least) >= width) return out;
  const absl::Span<const Milliwatts> chain_rooms = ChainRooms(kept);
  const int last = static_cast<int>(groups_.size()) - 1;  // the racks under no power domain
  for (int group = 0; group <= last; ++group) {
    if (group_stale_[group]) RefreshPowerGroup(kept, group);
    const int all = group_at_least_[AtLeastIndex(group, type) + least];
    if (all == 0) continue;
    int below = 0;
    if (group_least_room_[group] < need) {
      const Group& g = groups_[group];
      const size_t slot = std::find(g.types.begin(), g.types.end(), type) - g.types.begin();
      below = BelowRoomAtLeast(g, slot, width, least, need);
    }
    const Milliwatts above = group == last ? std::numeric_limits<Milliwatts>::max() : chain_rooms[group];
    out.rack_short += below;
    (above < need ? out.chain_short : out.powered) += all - below;
  }
  return out;
}

absl::Status PowerGroupIndex::Check(const KeptRoomsAndTallies& kept) const {
  if (absl::Status groups = CheckPowerGroups(kept); !groups.ok()) return groups;
  return CheckPowerOrder(kept);
}

absl::Status PowerGroupIndex::CheckPowerGroups(const KeptRoomsAndTallies& kept) const {
  const Topology& t = *topology_;
  // Each group against a count over its racks, at every threshold that matters: each rack's own room, and just
  // above it, where that rack starts to count as short.
  for (int group = 0; group <= static_cast<int>(t.power_domains().size()); ++group) {
    const PowerDomainId id = group == static_cast<int>(t.power_domains().size()) ? kNoId : group;
    const std::vector<RackId>& racks = GroupRacks(kept, id);
    auto count = [&](NodeTypeId type, int least, Milliwatts below) {
      int nodes = 0;
      for (RackId r : racks) {
        if (kept.rack_room[r] >= below) continue;
        for (const RackTypeTally& tally : kept.rack_tallies[r])
          if (tally.type == type)
            for (int f = least; f < static_cast<int>(tally.up_by_free.size()); ++f) nodes += tally.up_by_free[f];
      }
      return nodes;
    };
    for (RackId threshold : racks) {
      for (const Milliwatts room : {kept.rack_room[threshold], kept.rack_room[threshold] + 1}) {
        for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t.node_types().size()); ++type) {
          for (int least = 0; least <= t.node_types()[type].gpus; ++least) {
            const GroupNodes nodes = GroupNodesWithFree(kept, id, type, least, room);
            if (nodes.below_room != count(type, least, room) ||
                nodes.all != count(type, least, std::numeric_limits<Milliwatts>::max()))
              return absl::InternalError(absl::StrCat("power group of ", t.racks()[threshold].name, " stale"));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace rackwise::internal
