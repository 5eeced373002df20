// The placer's power groups: per power domain, its racks ordered by their own room with running sums of their
// node tallies, so that a refusal counts "nodes short of rack power" with one binary search per group instead of
// a look at every rack. See GroupNodesWithFree in placement_indexes.h.
//
// A change to one rack (its room, or a node's free GPUs or health) marks its group stale; the next question about
// the group refreshes it: O(racks in the group x GPUs per node), a handful of racks under a row. Racks under no
// power domain form one group, so a cluster described without power domains pays O(racks) per refresh there.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "placement_indexes.h"

namespace rackwise::internal {

int PlacementIndexes::GroupOf(RackId rack) const { return GroupIndex(topology_->racks()[rack].power_domain); }

const std::vector<RackId>& PlacementIndexes::GroupRacks(PowerDomainId group) const {
  return group == kNoId ? root_racks_ : topology_->power_domains()[group].racks;
}

void PlacementIndexes::LayOutPowerGroups() {
  const Topology& t = *topology_;
  groups_.resize(t.power_domains().size() + 1);
  group_stale_.assign(groups_.size(), 1);  // filled when first asked
  group_max_rack_free_.assign(groups_.size(), 0);
  group_least_room_.assign(groups_.size(), kNoHeadroom);
  group_first_rack_.assign(groups_.size(), kNoId);
  group_width_ = 1;
  for (const NodeType& type : t.node_types()) group_width_ = std::max<size_t>(group_width_, type.gpus + 1);
  group_at_least_.assign(groups_.size() * t.node_types().size() * group_width_, 0);
  for (int group = 0; group < static_cast<int>(groups_.size()); ++group) {
    PowerGroupIndex& g = groups_[group];
    g.by_room = group == static_cast<int>(t.power_domains().size()) ? root_racks_ : t.power_domains()[group].racks;
    if (!g.by_room.empty()) group_first_rack_[group] = *std::min_element(g.by_room.begin(), g.by_room.end());
    for (RackId r : g.by_room)
      for (const RackTypeTally& tally : rack_tallies_[r])
        if (std::find(g.types.begin(), g.types.end(), tally.type) == g.types.end()) g.types.push_back(tally.type);
    g.cumulative.resize(g.types.size());
    for (size_t slot = 0; slot < g.types.size(); ++slot)
      g.cumulative[slot].assign((g.by_room.size() + 1) * (t.node_types()[g.types[slot]].gpus + 1), 0);
    g.at_least = g.cumulative;
    g.rooms.assign(g.by_room.size(), 0);
  }
}

const PlacementIndexes::PowerGroupIndex& PlacementIndexes::FreshGroup(PowerDomainId group) const {
  return groups_[FreshGroupIndex(group)];
}

const std::vector<int>* PlacementIndexes::GroupSums(const PowerGroupIndex& g, NodeTypeId type) const {
  const auto slot = std::find(g.types.begin(), g.types.end(), type);
  return slot == g.types.end() ? nullptr : &g.cumulative[slot - g.types.begin()];
}

// In place, without allocating. Done when a group is first asked after a change, not on the change: the
// simulator's backfill commits and releases on scratch ledgers that never ask.
void PlacementIndexes::RefreshPowerGroup(int group) const {
  PowerGroupIndex& g = groups_[group];
  group_stale_[group] = 0;
  auto before = [&](RackId a, RackId b) {
    return rack_room_kept_[a] != rack_room_kept_[b] ? rack_room_kept_[a] < rack_room_kept_[b] : a < b;
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
      for (const RackTypeTally& tally : rack_tallies_[g.by_room[i]]) {
        if (tally.type != g.types[slot]) continue;
        for (size_t f = 0; f < width; ++f) row[f] += tally.up_by_free[f];
      }
      int running = 0;
      for (size_t f = width; f-- > 0;) at_least[(i + 1) * width + f] = running += row[f];
    }
  }
  for (size_t i = 0; i < g.by_room.size(); ++i) g.rooms[i] = rack_room_kept_[g.by_room[i]];
  int most_free = 0;
  for (RackId r : g.by_room) most_free = std::max(most_free, RackFree(r));
  group_max_rack_free_[group] = most_free;
  group_least_room_[group] = g.by_room.empty() ? kNoHeadroom : rack_room_kept_[g.by_room.front()];
  for (size_t slot = 0; slot < g.types.size(); ++slot) {
    const size_t width = topology_->node_types()[g.types[slot]].gpus + 1;
    const int* all = &g.cumulative[slot][g.by_room.size() * width];
    int* at_least = &group_at_least_[AtLeastIndex(group, g.types[slot])];
    int running = 0;
    for (size_t f = width; f-- > 0;) at_least[f] = running += all[f];
  }
}

size_t PlacementIndexes::AtLeastIndex(int group, NodeTypeId type) const {
  return (static_cast<size_t>(group) * topology_->node_types().size() + type) * group_width_;
}

void PlacementIndexes::RackGroupChanged(RackId rack) {
  if (!groups_.empty()) group_stale_[GroupOf(rack)] = 1;
  KeepRoomExtremes(rack);
}

size_t PlacementIndexes::RacksBelowRoom(const PowerGroupIndex& g, Milliwatts room) {
  // Every rack below the room, or none, without the search: the usual answers on uncapped or full clusters.
  if (g.rooms.empty() || g.rooms.front() >= room) return 0;
  if (g.rooms.back() < room) return g.rooms.size();
  return std::partition_point(g.rooms.begin(), g.rooms.end(), [&](Milliwatts r) { return r < room; }) - g.rooms.begin();
}

absl::Span<const int> PlacementIndexes::GroupFreeHistogram(PowerDomainId group, NodeTypeId type,
                                                           Milliwatts room) const {
  const PowerGroupIndex& g = FreshGroup(group);
  const std::vector<int>* sums = GroupSums(g, type);
  if (sums == nullptr) return {};
  const size_t width = topology_->node_types()[type].gpus + 1;
  return absl::MakeConstSpan(*sums).subspan(RacksBelowRoom(g, room) * width, width);
}

PlacementIndexes::GroupNodes PlacementIndexes::GroupNodesWithFree(PowerDomainId group, NodeTypeId type, int least,
                                                                  Milliwatts room) const {
  const PowerGroupIndex& g = FreshGroup(group);
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

int PlacementIndexes::BelowRoomAtLeast(const PowerGroupIndex& group, size_t slot, size_t width, int least,
                                       Milliwatts room) {
  return group.at_least[slot][RacksBelowRoom(group, room) * width + least];
}

PlacementIndexes::PowerShortNodes PlacementIndexes::CountPowerShortNodesByGroup(NodeTypeId type, int least,
                                                                                Milliwatts need) const {
  PowerShortNodes out;
  const size_t width = topology_->node_types()[type].gpus + 1;
  least = std::max(least, 0);
  if (static_cast<size_t>(least) >= width) return out;
  const absl::Span<const Milliwatts> chain_rooms = ChainRooms();
  const int last = static_cast<int>(groups_.size()) - 1;  // the racks under no power domain
  for (int group = 0; group <= last; ++group) {
    if (group_stale_[group]) RefreshPowerGroup(group);
    const int all = group_at_least_[AtLeastIndex(group, type) + least];
    if (all == 0) continue;
    int below = 0;
    if (group_least_room_[group] < need) {
      const PowerGroupIndex& g = groups_[group];
      const size_t slot = std::find(g.types.begin(), g.types.end(), type) - g.types.begin();
      below = BelowRoomAtLeast(g, slot, width, least, need);
    }
    const Milliwatts above = group == last ? std::numeric_limits<Milliwatts>::max() : chain_rooms[group];
    out.rack_short += below;
    (above < need ? out.chain_short : out.powered) += all - below;
  }
  return out;
}

absl::Status PlacementIndexes::CheckPowerGroups() const {
  const Topology& t = *topology_;
  for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t.node_types().size()); ++type) {
    RackTypeTally sum{type, 0, 0, 0, std::vector<int>(t.node_types()[type].gpus + 1, 0), 0};
    for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
      for (const RackTypeTally& tally : rack_tallies_[r]) {
        if (tally.type != type) continue;
        sum.nodes += tally.nodes;
        sum.down += tally.down;
        sum.drained += tally.drained;
        sum.up_free_gpus += tally.up_free_gpus;
        for (size_t f = 0; f < sum.up_by_free.size(); ++f) sum.up_by_free[f] += tally.up_by_free[f];
      }
    }
    const RackTypeTally& kept = type_tallies_[type];
    if (sum.nodes != kept.nodes || sum.down != kept.down || sum.drained != kept.drained ||
        sum.up_free_gpus != kept.up_free_gpus || sum.up_by_free != kept.up_by_free)
      return absl::InternalError(absl::StrCat("node type ", t.node_types()[type].name, " tally stale"));
  }
  // Each group against a count over its racks, at every threshold that matters: each rack's own room, and just
  // above it, where that rack starts to count as short.
  for (int group = 0; group <= static_cast<int>(t.power_domains().size()); ++group) {
    const PowerDomainId id = group == static_cast<int>(t.power_domains().size()) ? kNoId : group;
    const std::vector<RackId>& racks = GroupRacks(id);
    auto count = [&](NodeTypeId type, int least, Milliwatts below) {
      int nodes = 0;
      for (RackId r : racks) {
        if (rack_room_kept_[r] >= below) continue;
        for (const RackTypeTally& tally : rack_tallies_[r])
          if (tally.type == type)
            for (int f = least; f < static_cast<int>(tally.up_by_free.size()); ++f) nodes += tally.up_by_free[f];
      }
      return nodes;
    };
    for (RackId threshold : racks) {
      for (const Milliwatts room : {rack_room_kept_[threshold], rack_room_kept_[threshold] + 1}) {
        for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t.node_types().size()); ++type) {
          for (int least = 0; least <= t.node_types()[type].gpus; ++least) {
            const GroupNodes kept = GroupNodesWithFree(id, type, least, room);
            if (kept.below_room != count(type, least, room) ||
                kept.all != count(type, least, std::numeric_limits<Milliwatts>::max()))
              return absl::InternalError(absl::StrCat("power group of ", t.racks()[threshold].name, " stale"));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace rackwise::internal
