// The run-time state of a cluster: who holds which GPUs, what every rack and power domain draws, node and GPU
// health, and caps as changed at run time. The ledger enforces the hard invariants (no GPU given twice, no cap
// exceeded by a new allocation); the placer decides where things should go.
//
// Adding an allocation whose id is already held with the same content is a no-op, so that faces can replay
// events (Slurm calls the same hook on start and on recovery). Releasing an unknown id is harmless.
// Not thread-safe, const queries included (some indexes are brought up to date when first asked): faces
// serialise access (slurmctld holds its locks; the extender holds a mutex).
//
// This header holds what faces and the simulator read. The placer's indexes (free-count buckets, tallies, the
// headroom index, power groups) live behind it in placement/src/placement_indexes.h, kept current by every
// mutator here, so that they can change without rebuilding every face.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "rackwise/allocation.h"
#include "rackwise/deep_copied_ptr.h"
#include "rackwise/gpu_mask.h"
#include "rackwise/topology.h"

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
class PlacementIndexes;  // the placer's indexes, kept current by the ledger (placement/src/placement_indexes.h)
struct LedgerIndexes;    // the placer's way to them
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
  // Room under one cap (counted draw, see below) after keeping `reserve_fraction` of it free; negative when over.
  Milliwatts RackRoom(RackId rack, double reserve_fraction = 0) const {
    return UsableCap(rack_cap_[rack], reserve_fraction) - counted_rack_draw(rack);
  }
  Milliwatts PowerDomainRoom(PowerDomainId domain, double reserve_fraction = 0) const {
    return UsableCap(pd_cap_[domain], reserve_fraction) - counted_power_domain_draw(domain);
  }
  // What a rack can still take: the least room over the rack and every power domain above it. Never negative.
  Milliwatts RackHeadroom(RackId rack, double reserve_fraction = 0) const;

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

 private:
  friend struct internal::LedgerIndexes;
  static Milliwatts BoundedCap(Milliwatts cap);
  void Changed();            // a new generation
  uint64_t generation_ = 0;  // see generation()
  void Apply(const Allocation& allocation, int sign);
  // Brings the node's free count, its domain's and the placer's indexes up to date after its allocated or
  // failed GPUs or its health (which was `health_before`) changed.
  void Reindex(NodeId node, NodeHealth health_before);
  // Recomputes rack_adjust_ for one rack from its reading and carries the change up the power chain.
  void Readjust(RackId rack);

  const Topology* topology_;
  absl::flat_hash_map<std::string, Allocation> allocations_;
  std::vector<NodeHealth> health_;
  std::vector<GpuMask> allocated_;
  std::vector<GpuMask> failed_;
  std::vector<Milliwatts> rack_cap_, rack_draw_;
  std::vector<Milliwatts> pd_cap_, pd_draw_;
  std::vector<int> node_free_;  // free GPU count as indexed (0 when not up)
  std::vector<int> domain_free_;
  // Measured power: counted draw = estimate + adjust (see counted_rack_draw).
  std::vector<Milliwatts> rack_adjust_, pd_adjust_;
  std::vector<std::optional<Milliwatts>> rack_measured_;
  std::vector<Milliwatts> added_since_reading_, added_before_reading_;  // estimates placed since the last two readings
  double reclaim_fraction_ = 0;
  // Built last in the constructor, from the state above; a copy (the simulator's scratch ledgers) has its own.
  DeepCopiedPtr<internal::PlacementIndexes> indexes_;
};

}  // namespace rackwise
