// The run-time state of a cluster: who holds which GPUs, what every rack and power domain draws, node and GPU
// health, and caps as changed at run time. The ledger enforces the hard invariants (no GPU given twice, no cap
// exceeded by a new allocation); the placer decides where things should go.
//
// Adding an allocation whose id is already held with the same content is a no-op, so that faces can replay
// events (Slurm calls the same hook on start and on recovery). Releasing an unknown id is harmless.
// Not thread-safe, const queries included (some indexes are brought up to date when first asked): faces
// serialise access (slurmctld holds its locks; the extender holds a mutex).
#pragma once

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "rackwise/allocation.h"
#include "rackwise/gpu_mask.h"
#include "rackwise/rack_power_order.h"
#include "rackwise/topology.h"
#include "rackwise/tournament_tree.h"

namespace rackwise {

enum class NodeHealth {
  kUp,       // usable
  kDrained,  // running work stays, nothing new is placed
  kDown,     // nothing is placed; still powered, so it still draws idle power
};

enum class CommitMode {
  kEnforce,  // refuse anything that breaks a cap or uses unhealthy hardware
  kRecover,  // record what is already running (after a restart) even if caps were lowered meanwhile;
             // GPUs held twice are still refused
};

namespace internal {
class EmptyClusterMemo;  // the placer's figures for the cluster as described (empty_cluster_memo.h)
}  // namespace internal

class Ledger {
 public:
  // `topology` must outlive the ledger.
  explicit Ledger(const Topology& topology);

  const Topology& topology() const { return *topology_; }

  // Records an allocation. Errors: InvalidArgument (unknown node, index out of range, a node twice, no GPUs,
  // watts per GPU above kMaxWattsPerGpu or, when enforcing, outside the node type's min_per_gpu..max_per_gpu),
  // AlreadyExists (the id is held with different content), FailedPrecondition (a GPU is held or failed, a node
  // is not up, a cap would be exceeded; each with the rack, domain or node named). Nothing changes on error.
  absl::Status Commit(const Allocation& allocation, CommitMode mode = CommitMode::kEnforce);
  // Whether Commit would accept the allocation now, with the same error it would return; changes nothing.
  // Answers "would this fit?" without committing and releasing a probe. With `reserve_fraction`, caps are
  // checked less that reserve (the policy's usable caps: what a face must hold before it starts a job).
  absl::Status Check(const Allocation& allocation, CommitMode mode = CommitMode::kEnforce,
                     double reserve_fraction = 0) const;
  // Releases the old allocation with this id (if any) and commits the new one; on error the old one stays.
  absl::Status Replace(const Allocation& allocation, CommitMode mode = CommitMode::kEnforce);
  // Returns false if the id is unknown (which is not an error).
  bool Release(std::string_view id);

  // Changes whenever anything a placement reads changes (an allocation, a node's health, a failed GPU, a cap, a
  // power reading), and is unique across every ledger of the process: two ledgers at the same generation are in
  // the same state, so a decision taken at one generation stands for as long as it lasts (refusal_memo.h). A
  // copy keeps its source's generation until either changes. Every mutator below must call Changed().
  uint64_t generation() const { return generation_; }

  const Allocation* Find(std::string_view id) const;
  size_t allocation_count() const { return allocations_.size(); }
  std::vector<const Allocation*> Allocations() const;  // sorted by id

  void SetNodeHealth(NodeId node, NodeHealth health);
  NodeHealth node_health(NodeId node) const { return health_[node]; }
  void SetGpuFailed(NodeId node, int gpu, bool failed);
  GpuMask failed_gpus(NodeId node) const { return failed_[node]; }

  // Caps in force (as described, unless changed here). Lowering a cap below the current draw is allowed: what
  // runs keeps running, nothing new is placed there until the draw falls. Caps are clamped to 0..kMaxCapKw.
  void SetRackCap(RackId rack, Milliwatts cap);
  void SetPowerDomainCap(PowerDomainId domain, Milliwatts cap);
  Milliwatts rack_cap(RackId rack) const { return rack_cap_[rack]; }
  Milliwatts power_domain_cap(PowerDomainId domain) const { return pd_cap_[domain]; }

  // Draw = idle draw of every node below + what allocations add.
  Milliwatts rack_draw(RackId rack) const { return rack_draw_[rack]; }
  Milliwatts power_domain_draw(PowerDomainId domain) const { return pd_draw_[domain]; }
  // Room under one cap after keeping `reserve_fraction` of it free; negative when the draw is above it.
  // Room under one cap: counted draw (see below), not the bare estimate.
  Milliwatts RackRoom(RackId rack, double reserve_fraction = 0) const {
    return UsableCap(rack_cap_[rack], reserve_fraction) - counted_rack_draw(rack);
  }
  Milliwatts PowerDomainRoom(PowerDomainId domain, double reserve_fraction = 0) const {
    return UsableCap(pd_cap_[domain], reserve_fraction) - counted_power_domain_draw(domain);
  }
  // What a rack can still take: the least room over the rack and every power domain above it. Never negative.
  Milliwatts RackHeadroom(RackId rack, double reserve_fraction = 0) const;
  // The most any rack can still take with the policy's reserve kept: the largest, over racks, of the least room
  // over the rack and every power domain above it (negative when every rack is over; kNoHeadroom without racks).
  // Kept on every change up the power tree (ledger_headroom.cc), so that "can any rack power one share of this
  // job?" costs O(1) instead of a pass over every rack.
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

  GpuMask allocated_gpus(NodeId node) const { return allocated_[node]; }
  // GPUs that could be given out now: not allocated, not failed, node up.
  // Inline: node picks and capacity sums ask them of every node of the domains they look at.
  GpuMask free_gpus(NodeId node) const {
    if (health_[node] != NodeHealth::kUp) return 0;
    return FullGpuMask(topology_->nodes()[node].gpus) & ~allocated_[node] & ~failed_[node];
  }
  int free_gpu_count(NodeId node) const { return node_free_[node]; }
  // Free GPUs on up nodes of a domain; maintained incrementally.
  int domain_free_gpus(DomainId domain) const { return domain_free_[domain]; }
  // Nodes of a domain that are up and have at least `k` free GPUs.
  int domain_nodes_with_free(DomainId domain, int k) const;
  // Domains of one node type whose free GPU count is exactly `free`, in no particular order. The placer walks
  // these buckets for best fit instead of scanning the cluster.
  const std::vector<DomainId>& DomainsWithFree(NodeTypeId type, int free) const;
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

  // --- Power groups: the racks directly under one power domain, or (kNoId) the racks under none ---
  // Kept so that a refusal counts nodes per reason group by group instead of rack by rack (ledger_power_groups.cc).
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

  // --- Measured power (telemetry) ---
  // The draw that caps are checked against. Without a measurement it is the estimate (rack_draw). With one,
  // M = measured + estimates of allocations made since the previous reading (the reading may predate their
  // ramp-up): counted = M when M >= estimate, else estimate - reclaim * (estimate - M). Since reclaim < 1, the
  // counted draw is never below M: a placement that fits the counted draw also fits what the rack draws.
  Milliwatts counted_rack_draw(RackId rack) const { return rack_draw_[rack] + rack_adjust_[rack]; }
  Milliwatts counted_power_domain_draw(PowerDomainId domain) const { return pd_draw_[domain] + pd_adjust_[domain]; }
  // The last reading of a rack's whole draw, if one was applied (and not cleared since).
  std::optional<Milliwatts> measured_rack_draw(RackId rack) const;
  // M as above, for a measured rack: the reading plus what was placed since.
  std::optional<Milliwatts> measured_rack_draw_now(RackId rack) const;
  // Applies one round of readings: one entry per rack, nullopt where there is no fresh reading (the rack falls
  // back to its estimate). `reclaim_fraction` is in [0, 0.5]. With `count_recent`, allocations made since the
  // previous reading still count on top of this one (a face that polls); without, every allocation already held
  // is taken to be in the reading (a one-shot read of a state file).
  void SetMeasuredDraw(const std::vector<std::optional<Milliwatts>>& rack_watts, double reclaim_fraction,
                       bool count_recent = true);
  void ClearMeasuredDraw();
  // The reclaim fraction of the last SetMeasuredDraw (0 when none).
  double reclaim_fraction() const { return reclaim_fraction_; }

  // What the ledger charges for one GPU of `allocation` on `node`: the declared watts (never below the node
  // type's floor: no job is free), else the node type's draw. The simulator meters real draw against it.
  Milliwatts PerGpu(const Allocation& allocation, NodeId node) const;

  // Checks every invariant from scratch (draws equal idle + allocations, no GPU twice, indexes consistent).
  // For tests and `rackwise validate --state`; returns the first inconsistency.
  absl::Status CheckInvariants() const;

  // For the placer: figures of the cluster as described, empty, by request shape. Shared by copies of this
  // ledger, which have the same description.
  internal::EmptyClusterMemo& empty_cluster_memo() const { return *empty_cluster_memo_; }

 private:
  static Milliwatts BoundedCap(Milliwatts cap);
  void Changed();            // a new generation
  uint64_t generation_ = 0;  // see generation()
  void Apply(const Allocation& allocation, int sign);
  void Reindex(NodeId node);
  // Removes (sign -1) or adds (+1) the node's current health and free count to its rack's tally.
  void Tally(NodeId node, int sign);
  absl::Status CheckTallies() const;
  // Recomputes rack_adjust_ for one rack from its reading and carries the change up the power chain.
  void Readjust(RackId rack);
  // The headroom index (MaxRackHeadroom): rebuilt from scratch (every power group marked stale), or brought up
  // to date after a change of one rack's draw or cap, or of one power domain's cap.
  void RebuildHeadroom();
  // Power groups: the group of a rack, laying the groups out, and marking a rack's group stale after its room or
  // its tallies changed (it is refreshed when next asked).
  int GroupOf(RackId rack) const;
  void LayOutPowerGroups();  // once: each group's racks and node types, and room for its running sums
  void RefreshPowerGroup(int group) const;
  void RackGroupChanged(RackId rack);
  absl::Status CheckPowerGroups() const;
  void RackPowerChanged(RackId rack);
  void PowerDomainPowerChanged(PowerDomainId domain);
  // Carries a change of one child's kept value (old -> new) to power domain `parent` (kNoId: the top) and up.
  void CarryHeadroomUp(PowerDomainId parent, Milliwatts old_value, Milliwatts new_value);
  Milliwatts RackRoomWithPolicyReserve(RackId rack) const;
  Milliwatts BestChildOf(PowerDomainId domain) const;  // over the children's kept values; kNoId: the top
  absl::Status CheckHeadroom() const;

  const Topology* topology_;
  absl::flat_hash_map<std::string, Allocation> allocations_;
  std::vector<NodeHealth> health_;
  std::vector<GpuMask> allocated_;
  std::vector<GpuMask> failed_;
  std::vector<Milliwatts> rack_cap_, rack_draw_;
  std::vector<Milliwatts> pd_cap_, pd_draw_;
  // Placement index.
  std::vector<int> node_free_;  // free GPU count as indexed (0 when not up)
  std::vector<int> domain_free_;
  std::vector<std::vector<int>> domain_hist_;                // [domain][f] = up nodes with exactly f free GPUs
  std::vector<std::vector<std::vector<DomainId>>> buckets_;  // [type][free] -> domains
  std::vector<int> bucket_pos_;                              // position of each domain in its bucket
  std::vector<std::vector<RackTypeTally>> rack_tallies_;
  std::vector<RackTypeTally> type_tallies_;  // [type]
  // Measured power: counted draw = estimate + adjust (see counted_rack_draw).
  std::vector<Milliwatts> rack_adjust_, pd_adjust_;
  std::vector<std::optional<Milliwatts>> rack_measured_;
  std::vector<Milliwatts> added_since_reading_, added_before_reading_;  // estimates placed since the last two readings
  double reclaim_fraction_ = 0;
  // Headroom index, with the policy's reserve: each rack's own room, and per power domain the most a rack below
  // it can take as far as that domain and everything below it allow (min of its room and its children's best).
  std::vector<Milliwatts> rack_room_kept_, pd_headroom_;
  std::vector<Milliwatts> pd_child_best_;  // the largest kept value among a power domain's racks and domains
  std::vector<RackId> root_racks_;         // racks under no power domain
  std::vector<PowerDomainId> root_pds_;
  Milliwatts top_headroom_ = kNoHeadroom;
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
  const Ledger& FreshExtremes() const {
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
  // (group_stale_), so a const query may write here: the ledger is not thread-safe (see the top).
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
  void BuildPowerOrderRows() const;  // the racks' rows, from the ledger as it is
  absl::Status CheckPowerOrder() const;
  std::shared_ptr<internal::EmptyClusterMemo> empty_cluster_memo_;
};

}  // namespace rackwise
