// Gang reservations: kube-scheduler sends the pods of a group one at a time and has no reserve verb, so the
// first pod of a group makes the core plan the WHOLE group (fewest NVLink domains, power caps included) and
// books it in the ledger at once, as one slot per pod. Later pods of the group are steered to free slots;
// binding assigns a slot to a pod; a slot nobody took by the deadline is released, so an abandoned group never
// holds GPUs for longer than the TTL. Each slot is its own ledger allocation ("<group>#<n>"), so a finished pod
// frees exactly its GPUs. Time is passed in (milliseconds on any monotonic scale). Not thread-safe: the
// extender service serialises calls.
//
// Gang schedulers hold no room for pods that do not come: kube-scheduler's own GangScheduling plugin lets no pod
// of a gang into its queue before minCount of them exist (PreEnqueue) and places the group in one cycle. The
// extender sees a group only through its pods' filter and bind calls, so arrivals stand in for existence: each
// distinct pod of the group seen is an arrival; a group still short of its pods whose arrivals stop for the
// arrival window loses its free slots, however long its TTL; and one whose arrivals have been quiet for a while
// yields its free slots to another group whose whole plan needs them (YieldStalled). A later pod of the group
// plans its missing slots again.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger_booking.h"
#include "ledger_owners.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_decision.h"
#include "rackwise/placement_request.h"

namespace rackwise::k8s {

struct GangSlot {
  std::string allocation_id;  // in the ledger
  NodeId node = kNoId;
  GpuMask gpus = 0;
  std::string pod;  // "namespace/name" once bound; empty: free
};

struct GangReservation {
  std::string group;
  int size = 0;            // pods in the group
  int pod_gpus = 0;        // GPUs per pod
  int64_t expires_ms = 0;  // free slots are released after this
  int next_slot = 0;
  std::vector<GangSlot> slots;
  std::set<std::string> arrived;  // distinct pods of the group seen (filtered, bound or found running)
  int64_t last_arrival_ms = 0;    // when the last new one was seen, or one was bound
  int64_t arrival_window_ms = 0;  // 0: not watched (a group rebuilt from running pods)

  int free_slots() const;
  int assigned_slots() const;
  bool HasFreeSlotOn(NodeId node) const;
  const GangSlot* SlotOf(const std::string& pod) const;
  // Fewer of its pods seen than it has slots for: the rest may never come.
  bool AwaitingPods() const { return static_cast<int>(arrived.size()) < size; }
};

// The request that plans `missing` pods of a group as one job (what Ensure places, and what preemption frees room
// for): missing x per_pod.gpus GPUs in whole pods per node, with per_pod's locality, watts and allowed nodes.
PlacementRequest GroupRequest(const std::string& group, int missing, const PlacementRequest& per_pod);

class GangReservations {
 public:
  explicit GangReservations(Ledger* ledger) : ledger_(ledger) {}
  // Books and releases slots through the shared power ledger from now on (null: the extender's ledger alone).
  // A slot planned at filter time is reserved there before it counts here, else a gang would run unreserved.
  void SetGate(ledger::LedgerBooking* gate) { gate_ = gate; }

  // Makes sure the group has a slot for every pod not yet bound: plans the missing ones with the core as one
  // job of missing x per_pod.gpus GPUs in whole pods per node (share_gpus) and commits them. A refusal passes
  // through unchanged and books nothing. `per_pod` carries the locality, watts and allowed nodes; its gpus is the
  // per-pod count. A refusal by the shared ledger is FailedPrecondition (naming it) and books nothing.
  absl::StatusOr<PlacementOutcome> Ensure(const std::string& group, int size, const PlacementRequest& per_pod,
                                          int64_t now_ms, int64_t ttl_ms);

  // Records that `pod` of `group` was seen (filter): a pod not seen before restarts the group's arrival window
  // (`window_ms`, 0: arrivals are not watched). No-op for a group without a reservation.
  void NoteArrival(const std::string& group, const std::string& pod, int64_t now_ms, int64_t window_ms);
  // Releases the free slots of every other group still awaiting pods whose last arrival is at least `quiet_ms`
  // old: they make way for `except`'s plan. Returns the slots released.
  int YieldStalled(const std::string& except, int64_t now_ms, int64_t quiet_ms);
  // Gives `pod` a free slot on `node` (or returns the one it holds there). nullopt: no free slot there.
  // Extends the deadline to now + ttl: a group that makes progress keeps its slots.
  std::optional<GangSlot> Assign(const std::string& group, const std::string& pod, NodeId node, int64_t now_ms,
                                 int64_t ttl_ms);
  // Undoes Assign (a failed binding): the slot is free again.
  void Unassign(const std::string& group, const std::string& pod);
  // Books a pod found running on `node` (after a restart or a bind we did not make) into its group: a free
  // slot there if any, else a new slot of its GPUs committed in recovery mode. Errors come from the ledger.
  absl::Status Adopt(const std::string& group, int size, const std::string& pod, NodeId node, GpuMask gpus,
                     Milliwatts per_gpu);
  // The pod ended: its slot and GPUs are released. Returns false if it held none.
  bool ReleasePod(const std::string& group, const std::string& pod);
  // Releases free slots of reservations past their deadline, and of groups still awaiting pods whose arrival
  // window has passed; drops empty reservations. Returns slots released.
  int Expire(int64_t now_ms);
  // Releases everything (a relist rebuilds the state).
  void Clear();

  const GangReservation* Find(const std::string& group) const;
  const std::map<std::string, GangReservation>& all() const { return groups_; }
  int total_free_slots() const;

 private:
  void DropIfEmpty(const std::string& group);
  int ReleaseFreeSlots(GangReservation& r);
  // Commits a slot planned now (kEnforce), through the gate when there is one.
  absl::Status BookSlot(const Allocation& slot);
  void ReleaseSlot(const std::string& allocation_id);

  Ledger* ledger_;
  ledger::LedgerBooking* gate_ = nullptr;
  std::map<std::string, GangReservation> groups_;
};

}  // namespace rackwise::k8s
