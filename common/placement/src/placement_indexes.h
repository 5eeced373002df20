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
// - Each rack's and power domain's own room (KeptRoomsAndTallies, with the rack tallies): the extremes and the
//   power groups, worked out when asked, need no ledger.
// - The power groups and the racks ordered by room, a class of their own (PowerGroupIndex, power_group_index.h)
//   that reads only the kept rooms and tallies: a refusal's "nodes short of power" without a pass over every
//   rack. Its questions are asked here (GroupNodesWithFree and the rest), which hand it the kept rooms and tallies.
// Not thread-safe, queries included (some parts are brought up to date when first asked), as the ledger.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "power_group_index.h"
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
  void SetGeneration(uint64_t generation) { power_groups_.SetGeneration(generation); }
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
  using RackTypeTally = internal::RackTypeTally;
  // One entry per node type present in the rack, in the order the types first appear among its nodes.
  const std::vector<RackTypeTally>& rack_tallies(RackId rack) const { return kept_.rack_tallies[rack]; }
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

  // ---- Power groups and the racks' power order: PowerGroupIndex's questions (power_group_index.h says what each
  // answers), asked of the one kept here with the rooms and tallies kept here ----
  using GroupNodes = PowerGroupIndex::GroupNodes;
  using PowerShortNodes = PowerGroupIndex::PowerShortNodes;
  const std::vector<RackId>& GroupRacks(PowerDomainId group) const { return power_groups_.GroupRacks(kept_, group); }
  RackId GroupFirstRack(PowerDomainId group) const { return power_groups_.GroupFirstRack(group); }
  GroupNodes GroupNodesWithFree(PowerDomainId group, NodeTypeId type, int least, Milliwatts room) const {
    return power_groups_.GroupNodesWithFree(kept_, group, type, least, room);
  }
  absl::Span<const int> GroupFreeHistogram(PowerDomainId group, NodeTypeId type,
                                           Milliwatts room = std::numeric_limits<Milliwatts>::max()) const {
    return power_groups_.GroupFreeHistogram(kept_, group, type, room);
  }
  PowerShortNodes CountPowerShortNodes(NodeTypeId type, int least, Milliwatts need) const {
    return power_groups_.CountPowerShortNodes(kept_, type, least, need);
  }
  absl::Span<const Milliwatts> ChainRooms() const { return power_groups_.ChainRooms(kept_); }
  static_assert(PowerGroupIndex::kNoRack == kNoHeadroom);  // GroupLeastRackRoom of an empty group
  Milliwatts GroupLeastRackRoom(PowerDomainId group) const { return power_groups_.GroupLeastRackRoom(kept_, group); }
  int GroupMaxRackFree(PowerDomainId group) const { return power_groups_.GroupMaxRackFree(kept_, group); }

  // Figures of the cluster as described, empty, by request shape. Shared by the copies of a ledger, which have the
  // same description.
  EmptyClusterMemo& empty_cluster_memo() const { return *empty_cluster_memo_; }

 private:
  const Topology* topology_;
  // NVLink domains.
  std::vector<std::vector<int>> domain_hist_;                // [domain][f] = up nodes with exactly f free GPUs
  std::vector<std::vector<std::vector<DomainId>>> buckets_;  // [type][free] -> domains
  std::vector<int> bucket_pos_;                              // position of each domain in its bucket
  void MoveDomain(DomainId domain, int free_before, int free_now);
  absl::Status CheckDomains(const Ledger& ledger) const;

  // Tallies (the racks' in kept_).
  std::vector<RackTypeTally> type_tallies_;  // [type]
  void LayOutTallies(const Ledger& ledger);
  // Removes (sign -1) or adds (+1) a node as counted to its rack's and its type's tally.
  void Tally(NodeId node, NodeCount count, int sign);
  absl::Status CheckTallies(const Ledger& ledger) const;
  absl::Status CheckTypeTallies() const;  // each type's against the sum of the racks'

  // The racks' tallies, and each rack's and power domain's own room with the policy's reserve: kept here so that
  // the extremes and the power groups, worked out when asked, need no ledger.
  KeptRoomsAndTallies kept_;

  // Headroom index, with the policy's reserve: per power domain the most a rack below it can take as far as that
  // domain and everything below it allow (min of its room and its children's best).
  std::vector<Milliwatts> pd_headroom_;
  std::vector<Milliwatts> pd_child_best_;  // the largest kept value among a power domain's racks and domains
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

  PowerGroupIndex power_groups_;

  std::shared_ptr<EmptyClusterMemo> empty_cluster_memo_;
};

// The placer's way to a ledger's indexes (the ledger grants it: LedgerIndexes is its friend).
struct LedgerIndexes {
  static const PlacementIndexes& Of(const Ledger& ledger) { return *ledger.indexes_.get(); }
};
inline const PlacementIndexes& IndexesOf(const Ledger& ledger) { return LedgerIndexes::Of(ledger); }

}  // namespace rackwise::internal
