// Internal to the placer: the indexes it reads to decide and to explain a refusal without visiting every node or
// rack. The ledger owns one (ledger.h) and keeps it current on every change it records; the placer reaches it
// through IndexesOf (below). Kept out of the public header so that faces and the simulator see only the ledger's
// facts (allocations, health, caps, draws), and the placer's figures can change shape without rebuilding them.
//
// What is kept, and why:
// - NVLink domains by free GPU count per node type (DomainsWithFree), and per domain its up nodes by free count:
//   best fit walks buckets instead of scanning the cluster.
// - Per rack and per node type, its nodes by state (RackTypeTally): a refusal counts nodes per reason rack by rack
//   instead of node by node.
// - The headroom index (MaxRackHeadroom) and the kept extremes (the least rooms, the most free GPUs in a rack):
//   "can power block this job anywhere?" in O(1) (placement_indexes_headroom.cc).
// - Power groups, the racks under one power domain by room with running sums of their tallies
//   (placement_indexes_power_groups.cc), and the racks ordered by room (rack_power_order.h,
//   placement_indexes_power_order.cc): a refusal's "nodes short of power" without a pass over every rack.
// Not thread-safe, queries included (some parts are brought up to date when first asked), as the ledger.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "rack_power_order.h"
#include "rackwise/ledger.h"
#include "rackwise/topology.h"
#include "tournament_tree.h"

namespace rackwise::internal {

class EmptyClusterMemo;

// A node as the indexes count it: its health and its free GPUs (0 when not up).
struct NodeCount {
  NodeHealth health = NodeHealth::kUp;
  int free = 0;
};

class PlacementIndexes {
 public:
  // From the ledger as it stands (its own state filled in); shares nothing with it but the topology.
  explicit PlacementIndexes(const Ledger& ledger);

  // ---- Kept current by the ledger: each call follows the change in the ledger's own state ----
  // The ledger's generation, which dates the figures worked out when first asked (ChainRooms, the power order).
  void SetGeneration(uint64_t generation) { generation_ = generation; }
  // A node's health or free GPUs moved; `domain_free` is its NVLink domain's free GPUs on up nodes now.
  void NodeMoved(NodeId node, NodeCount before, NodeCount after, int domain_free);
  // A rack's draw or cap moved (after a commit or release, its tallies too).
  void RackPowerChanged(const Ledger& ledger, RackId rack);
  void PowerDomainPowerChanged(const Ledger& ledger, PowerDomainId domain);
  // A node of the rack changed health or failed GPUs: its group and extremes are refreshed when next asked.
  void RackGroupChanged(RackId rack);
  // Every room may have moved (a round of measured draws): the headroom index and the extremes from scratch.
  void RebuildHeadroom(const Ledger& ledger);
  // Every index against a count from scratch over `ledger`; the first inconsistency.
  absl::Status Check(const Ledger& ledger) const;

  // ---- NVLink domains ----
  // Domains of one node type whose free GPU count is exactly `free`, in no particular order. The placer walks
  // these buckets for best fit instead of scanning the cluster.
  const std::vector<DomainId>& DomainsWithFree(NodeTypeId type, int free) const;
  // Nodes of a domain that are up and have at least `k` free GPUs.
  int domain_nodes_with_free(DomainId domain, int k) const;

  // ---- Tallies ----
  // The nodes of one node type in one rack, by state; kept on every change so that a refusal report counts
  // nodes per reason rack by rack instead of visiting every node (a millisecond per refusal at 131,072 GPUs).
  struct RackTypeTally {
    NodeTypeId type = kNoId;
    int nodes = 0;
    int down = 0;
    int drained = 0;
    std::vector<int> up_by_free;  // [f]: up nodes with exactly f free GPUs
    long long up_free_gpus = 0;   // free GPUs on up nodes
  };
  // One entry per node type present in the rack, in the order the types first appear among its nodes.
  const std::vector<RackTypeTally>& rack_tallies(RackId rack) const { return rack_tallies_[rack]; }
  // The same over the whole cluster, for one node type.
  const RackTypeTally& type_tally(NodeTypeId type) const { return type_tallies_[type]; }

  // ---- Headroom and kept extremes ----
  // The most any rack can still take with the policy's reserve kept: the largest, over racks, of the least room
  // over the rack and every power domain above it (negative when every rack is over; kNoHeadroom without racks).
  // Kept on every change up the power tree, so that "can any rack power one share of this job?" costs O(1)
  // instead of a pass over every rack.
  static constexpr Milliwatts kNoHeadroom = std::numeric_limits<Milliwatts>::min();
  Milliwatts MaxRackHeadroom() const { return top_headroom_; }
  // Kept on every change in O(log n), so that "can power block this job anywhere?" is O(1) and a refusal or a
  // capacity bound where it cannot skips the power groups (a full rack or row has no room, but no GPU to block):
  // - the least room (the policy's reserve kept) of any rack with free GPUs on up nodes (the largest Milliwatts
  //   when there is none);
  // - the least, over racks with free GPUs, of their room shared among those GPUs (as for power domains below);
  // - the least room of any power domain with free GPUs below it;
  // - the least, over power domains with free GPUs below, of their room shared among those GPUs (rounded down;
  //   -1 when a room is negative): a job drawing at most this per GPU is blocked by no power domain;
  // - the most free GPUs on up nodes in one rack.
  // The racks changed since the last question are brought up to date when next asked (O(changed racks x log n)):
  // the simulator's backfill commits and releases thousands of times on scratch ledgers that never ask.
  Milliwatts LeastRackRoomWithFree() const { return FreshExtremes().least_rack_room_.Top(); }
  Milliwatts LeastRackRoomPerFreeGpu() const { return FreshExtremes().least_rack_room_per_free_.Top(); }
  Milliwatts LeastPowerDomainRoomWithFree() const { return FreshExtremes().least_pd_room_.Top(); }
  Milliwatts LeastPowerDomainRoomPerFreeGpu() const { return FreshExtremes().least_pd_room_per_free_.Top(); }
  int MostRackFree() const { return FreshExtremes().most_rack_free_.Top(); }
  // Free GPUs on up nodes below a power domain, and the power domains under none.
  long long power_domain_free_gpus(PowerDomainId domain) const { return FreshExtremes().pd_free_[domain]; }
  const std::vector<PowerDomainId>& root_power_domains() const { return root_pds_; }

  // ---- Power groups: the racks directly under one power domain, or (kNoId) the racks under none ----
  // Kept so that a refusal counts nodes per reason group by group instead of rack by rack.
  const std::vector<RackId>& GroupRacks(PowerDomainId group) const;
  // The lowest rack id of the group (kNoId when it has none), from a dense array: a refusal asks it of every
  // group, and reading each group's own list for it cost a cache miss per group.
  RackId GroupFirstRack(PowerDomainId group) const { return group_first_rack_[GroupIndex(group)]; }
  // Up nodes of `type` with at least `least` free GPUs in the group: all of them, and those in racks whose own
  // room (the policy's reserve kept) is below `room`. O(log racks in the group + GPUs per node).
  struct GroupNodes {
    int all = 0;
    int below_room = 0;
  };
  GroupNodes GroupNodesWithFree(PowerDomainId group, NodeTypeId type, int least, Milliwatts room) const;
  // The same racks' up nodes of `type` by free GPU count ([f]: nodes with exactly f free); empty when the group
  // has no node of the type.
  absl::Span<const int> GroupFreeHistogram(PowerDomainId group, NodeTypeId type,
                                           Milliwatts room = std::numeric_limits<Milliwatts>::max()) const;
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
  PowerShortNodes CountPowerShortNodes(NodeTypeId type, int least, Milliwatts need) const;
  static constexpr int kAsksBeforePowerOrder = 16;
  // Per power domain, the least room (the policy's reserve kept) of it and of every power domain above it. Worked
  // out when first asked after a change, O(power domains).
  absl::Span<const Milliwatts> ChainRooms() const;
  // The least own room (the policy's reserve kept) of the group's racks; kNoHeadroom for an empty group.
  // Inline with GroupMaxRackFree: a refusal's power sentence asks both of every group.
  Milliwatts GroupLeastRackRoom(PowerDomainId group) const { return group_least_room_[FreshGroupIndex(group)]; }
  // The most free GPUs (up nodes, every type) in one rack of the group: a bound for scans after such racks.
  int GroupMaxRackFree(PowerDomainId group) const { return group_max_rack_free_[FreshGroupIndex(group)]; }

  // Figures of the cluster as described, empty, by request shape. Shared by the copies of a ledger, which have the
  // same description.
  EmptyClusterMemo& empty_cluster_memo() const { return *empty_cluster_memo_; }

 private:
  const Topology* topology_;
  uint64_t generation_ = 0;  // the ledger's, see SetGeneration
  // NVLink domains.
  std::vector<std::vector<int>> domain_hist_;                // [domain][f] = up nodes with exactly f free GPUs
  std::vector<std::vector<std::vector<DomainId>>> buckets_;  // [type][free] -> domains
  std::vector<int> bucket_pos_;                              // position of each domain in its bucket
  void MoveDomain(DomainId domain, int free_before, int free_now);
  absl::Status CheckDomains(const Ledger& ledger) const;

  // Tallies.
  std::vector<std::vector<RackTypeTally>> rack_tallies_;
  std::vector<RackTypeTally> type_tallies_;  // [type]
  void LayOutTallies(const Ledger& ledger);
  // Removes (sign -1) or adds (+1) a node as counted to its rack's and its type's tally.
  void Tally(NodeId node, NodeCount count, int sign);
  absl::Status CheckTallies(const Ledger& ledger) const;

  // Headroom index, with the policy's reserve: each rack's own room, and per power domain its own room and the
  // most a rack below it can take as far as that domain and everything below it allow (min of its room and its
  // children's best). The power domains' rooms are kept here so that the extremes and ChainRooms, worked out when
  // asked, need no ledger.
  std::vector<Milliwatts> rack_room_kept_, pd_room_kept_, pd_headroom_;
  std::vector<Milliwatts> pd_child_best_;  // the largest kept value among a power domain's racks and domains
  std::vector<RackId> root_racks_;         // racks under no power domain
  std::vector<PowerDomainId> root_pds_;
  Milliwatts top_headroom_ = kNoHeadroom;
  // Carries a change of one child's kept value (old -> new) to power domain `parent` (kNoId: the top) and up.
  void CarryHeadroomUp(const Ledger& ledger, PowerDomainId parent, Milliwatts old_value, Milliwatts new_value);
  Milliwatts BestChildOf(PowerDomainId domain) const;  // over the children's kept values; kNoId: the top
  absl::Status CheckHeadroom(const Ledger& ledger) const;

  // The kept extremes (LeastRackRoomWithFree and the rest), refreshed when asked (mutable, as the power groups).
  using LeastTree = TournamentTree<Milliwatts, std::less<Milliwatts>>;
  mutable LeastTree least_rack_room_{std::numeric_limits<Milliwatts>::max()};
  mutable LeastTree least_rack_room_per_free_{std::numeric_limits<Milliwatts>::max()};
  mutable LeastTree least_pd_room_{std::numeric_limits<Milliwatts>::max()};
  mutable LeastTree least_pd_room_per_free_{std::numeric_limits<Milliwatts>::max()};
  mutable TournamentTree<int, std::greater<int>> most_rack_free_{0};
  mutable std::vector<long long> pd_free_;      // free GPUs on up nodes below each power domain
  mutable std::vector<RackId> extremes_stale_;  // racks whose room or tallies moved since the last question
  mutable std::vector<char> rack_extremes_stale_;
  int RackFree(RackId rack) const;  // free GPUs on the rack's up nodes, from its tallies
  const PlacementIndexes& FreshExtremes() const {
    if (!extremes_stale_.empty()) RefreshExtremes();
    return *this;
  }
  void RefreshExtremes() const;
  // Marks one rack for the refresh, after its room or tallies moved.
  void KeepRoomExtremes(RackId rack);
  // Brings one rack's entries, and its power chain's, up to date.
  void RefreshRackExtremes(RackId rack) const;
  void SetRackExtremes(RackId rack, int free) const;  // the rack's own three entries
  void KeepPowerDomainRoom(PowerDomainId domain) const;

  // Power groups.
  struct PowerGroupIndex {
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
  mutable std::vector<PowerGroupIndex> groups_;
  mutable std::vector<char> group_stale_;
  mutable std::vector<int> group_max_rack_free_;  // per group: the most free GPUs (up nodes) in one of its racks
  // Dense over the groups, so that a refusal's pass over every group reads a few contiguous values per group
  // instead of each group's own arrays: its least kept rack room (kNoHeadroom when it has no rack), and
  // [(group * types + type) * group_width_ + least]: its up nodes of the type with at least `least` free GPUs.
  std::vector<RackId> group_first_rack_;
  mutable std::vector<Milliwatts> group_least_room_;
  mutable std::vector<int> group_at_least_;
  size_t group_width_ = 0;                     // the most GPUs of any node type, plus one
  int GroupIndex(PowerDomainId group) const {  // into groups_ (kNoId: the last)
    return group == kNoId ? static_cast<int>(topology_->power_domains().size()) : group;
  }
  int FreshGroupIndex(PowerDomainId group) const {  // GroupIndex, the group refreshed first if it is stale
    const int index = GroupIndex(group);
    if (group_stale_[index]) RefreshPowerGroup(index);
    return index;
  }
  int GroupOf(RackId rack) const;
  void LayOutPowerGroups();  // once: each group's racks and node types, and room for its running sums
  void RefreshPowerGroup(int group) const;
  absl::Status CheckPowerGroups() const;
  // Up nodes of `type` (at `slot` in the group's types) with at least `least` free GPUs in the group's racks whose
  // own room is below `room`; the group is fresh.
  static int BelowRoomAtLeast(const PowerGroupIndex& group, size_t slot, size_t width, int least, Milliwatts room);
  size_t AtLeastIndex(int group, NodeTypeId type) const;  // into group_at_least_ (group: a GroupIndex)
  const PowerGroupIndex& FreshGroup(PowerDomainId group) const;
  const std::vector<int>* GroupSums(const PowerGroupIndex& group, NodeTypeId type) const;  // null: no such node
  static size_t RacksBelowRoom(const PowerGroupIndex& group, Milliwatts room);             // how many of by_room

  // The racks by room (CountPowerShortNodes), for the generation it was built at, and how often the count was
  // asked at the generation of asks_generation_.
  mutable RackPowerOrder power_order_;
  mutable std::optional<uint64_t> power_order_generation_, asks_generation_, chain_rooms_generation_;
  mutable int asks_ = 0;
  mutable std::vector<Milliwatts> chain_rooms_;    // ChainRooms, for chain_rooms_generation_
  mutable std::vector<int> power_order_at_least_;  // the racks' rows for the build, [rack][type * width + f]
  mutable std::vector<RackPowerOrder::RackRow> power_order_rows_;
  const RackPowerOrder& FreshPowerOrder() const;
  PowerShortNodes CountPowerShortNodesByGroup(NodeTypeId type, int least, Milliwatts need) const;
  void BuildPowerOrderRows() const;  // the racks' rows, from the indexes as they are
  absl::Status CheckPowerOrder() const;

  std::shared_ptr<EmptyClusterMemo> empty_cluster_memo_;
};

// The placer's way to a ledger's indexes (the ledger grants it: LedgerIndexes is its friend).
struct LedgerIndexes {
  static const PlacementIndexes& Of(const Ledger& ledger) { return *ledger.indexes_.get(); }
};
inline const PlacementIndexes& IndexesOf(const Ledger& ledger) { return LedgerIndexes::Of(ledger); }

}  // namespace rackwise::internal
