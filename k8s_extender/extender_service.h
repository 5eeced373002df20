// The extender service: one placement state (Topology + Ledger + gang reservations) behind the
// kube-scheduler verbs, the API-server view of pods and nodes, and the operator API. HTTP and gRPC are thin
// adapters over it. Thread-safe: every public method takes one mutex; a binding's call to the API server is
// made outside it. Time is passed in as milliseconds on a monotonic scale, never read inside.
//
// Ledger ids: "pod/<namespace>/<name>" for a pod placed alone, "<namespace>/<kind>/<group>#<n>" for a gang
// slot, and the caller's id for allocations made over gRPC.
//
// Where things are: the verbs (filter, prioritize, bind, preempt) and group planning in extender_service.cc; the
// API server's view, the operator API, the timer's beats and the gauges in extender_state.cc. Each other concern is
// a class of its own, held here as a member, with no lock of its own (every one is called only under mu_): the
// shared power ledger link (SharedLedgerLink), DRA (DraPods), measured power (MeasuredRackPower), the /limits
// document (PublishedLimits), what operators set and its saving (OperatorOverrides); preemption's choice and
// evictions are free functions (pod_preemption.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "candidate_nodes.h"
#include "dra_objects.h"
#include "dra_pods.h"
#include "extender_wire.h"
#include "gang_reservations.h"
#include "ledger_booking.h"
#include "ledger_owners.h"
#include "measured_rack_power.h"
#include "metrics.h"
#include "operator_overrides.h"
#include "pod_binder.h"
#include "pod_spec.h"
#include "published_limits.h"
#include "rackwise/ledger.h"
#include "rackwise/oversubscribed_allocations.h"
#include "rackwise/oversubscription.h"
#include "rackwise/placer.h"
#include "rackwise/telemetry.h"
#include "rackwise/topology.h"
#include "rackwise/v1/state.pb.h"
#include "shared_ledger_link.h"
#include "victim_reduction.h"

namespace rackwise::k8s {

struct ExtenderOptions {
  int64_t reservation_ttl_ms = 120'000;  // free gang slots are released this long after the last progress
  // A group still short of its pods loses its free slots when no new pod of it has been seen for this long (at
  // most the TTL), and yields them to another group's plan after a third of it (gang_reservations.h).
  int64_t gang_arrival_ms = 30'000;
  int64_t assume_ttl_ms = 30'000;     // a pod we bound survives a relist that does not show it yet
  size_t max_pending_pods = 100'000;  // pods remembered between filter and bind
  int64_t pending_ttl_ms = 900'000;
  // Candidate lists remembered by their bytes (see candidate_nodes.h); 0 turns the cache off.
  size_t candidate_cache_entries = 16;
  // With a shared power ledger: how often the timer's beat syncs with it (mirror, or reconcile on return).
  int64_t ledger_sync_ms = 1'000;
  // DRA device classes whose devices are whole GPUs (DeviceClasses backing nvidia.com/gpu count too).
  std::vector<std::string> gpu_device_classes = {kNvidiaGpuDeviceClass};
};

struct RackSnapshot {
  std::string name;
  Milliwatts draw = 0, cap = 0, headroom = 0;
};
struct PowerDomainSnapshot {
  std::string name;
  Milliwatts draw = 0, counted = 0, cap = 0, room = 0;  // room: under the cap less the policy's reserve
};
struct DomainSnapshot {
  std::string name, rack;
  int free_gpus = 0, gpus = 0;
};
struct StateSnapshot {
  std::vector<RackSnapshot> racks;
  std::vector<DomainSnapshot> domains;
  std::vector<PowerDomainSnapshot> power_domains;  // rows, halls: the feeds above the racks
  int allocations = 0;
  int reservations = 0;
  int free_reserved_slots = 0;
};

class ExtenderService {
 public:
  // `binder` may be null (standalone: bindings only book the ledger). `metrics` must outlive the service.
  ExtenderService(std::unique_ptr<Topology> topology, ExtenderOptions options, PodBinder* binder,
                  ExtenderMetrics* metrics);

  const Topology& topology() const { return *topology_; }
  // Recently seen candidate lists, resolved against this service's topology (pass to ParseExtenderArgs).
  CandidateNodeCache* candidate_cache() { return &candidate_cache_; }
  ExtenderMetrics& metrics() { return *metrics_; }

  // --- kube-scheduler verbs ---
  FilterResult Filter(const ExtenderArgs& args, int64_t now_ms);
  // Scores 0..10, one per candidate in order (0 for unknown or infeasible nodes).
  absl::StatusOr<std::vector<int>> Prioritize(const ExtenderArgs& args, int64_t now_ms);
  // Books the pod and posts its binding. Returns "" on success, else the error for ExtenderBindingResult.
  std::string Bind(const BindingArgs& args, int64_t now_ms);
  // kube-scheduler's proposed victims reduced to the core's (victim_reduction.h; pod_preemption.h): nodes
  // where no subset of the proposals makes room are dropped. For a group, one node is answered and the group's
  // victims on other nodes are evicted through the binder first (outside the lock); an eviction refused (a
  // PodDisruptionBudget: ResourceExhausted) fails the call. `wall_now_ms` (Unix) dates the victims' start times.
  absl::StatusOr<ReducedPreemption> Preempt(const PreemptionArgs& args, int64_t now_ms, int64_t wall_now_ms);
  // Releases the free slots of gang reservations past their deadline (ReservationTimer calls this; so does
  // Filter). Returns the slots released.
  int ExpireReservations(int64_t now_ms);

  // --- the shared power ledger (shared_ledger_link.h) ---
  // Books and releases the extender's own allocations through `gate` from now on (call before serving; it
  // must outlive the service). Unset: the extender's ledger alone decides, as without a `ledger:` section.
  void SetSharedLedger(ledger::LedgerBooking* gate);
  // On the timer's beat: once synced with the API server, syncs with the shared ledger every ledger_sync_ms
  // (re-mirrors the other owners; after a fallback, reconciles the whole k8s/ list first).
  void SyncSharedLedger(int64_t now_ms);
  // Every allocation of the extender's own as the shared ledger should hold it (pods alone, gang slots).
  std::vector<ledger::OwnAllocation> OwnAllocations() const;

  // --- the API server's view ---
  // Until synced, filter answers an error: the ledger is still being rebuilt from the API server.
  void SetSynced(bool synced);
  bool synced() const;
  void ApplyPod(const PodInfo& pod, int64_t now_ms);
  void DeletePod(const PodInfo& pod);
  // A (re)list: pods absent from it are released (except ones we bound within assume_ttl_ms).
  void ReplacePods(const std::vector<PodInfo>& pods, int64_t now_ms);
  // Node health from the API server: not Ready -> down, cordoned -> drained. Unknown names are ignored.
  void ApplyNode(const std::string& name, bool ready, bool unschedulable);

  // --- DRA and the Workload API (dra_pods.h) ---
  // One claim, template, slice, device class, ComputeDomain or pod group from a watch event; the bound pods it
  // concerns are booked anew when their GPUs or group change. A malformed object is left out, and its error
  // returned for the log.
  absl::Status ApplyDraObject(DraKind kind, const Json& object, bool deleted, int64_t now_ms);
  void ReplaceDraObjects(DraKind kind, const std::vector<Json>& items, int64_t now_ms);
  // A node's nvidia.com/gpu.clique label ("" when unlabelled): a ComputeDomain's group is planned within one
  // clique when its candidates carry the label. Unknown names are ignored.
  void SetNodeClique(const std::string& name, const std::string& clique);

  // --- operator API ---
  // Places a request (ids already resolved). With `commit`, a decision is booked under request.id. `count`
  // (optional) receives whether the core counted it oversubscribed, or why not (policy.oversubscribe_pct).
  absl::StatusOr<PlacementOutcome> Place(const PlacementRequest& request, bool commit,
                                         OversubscribedWatts* count = nullptr);
  // Releases an allocation made with Place. False if unknown.
  bool Release(const std::string& id);
  // A rack's or power domain's cap, in kW. NotFound for unknown names, InvalidArgument for a negative cap.
  absl::Status SetPowerCap(const std::string& name, double kilowatts);
  // An operator override of a node's health (wins over the API server's view while not kUp).
  absl::Status SetNodeHealth(const std::string& node, NodeHealth health, const std::vector<int>& failed_gpus);

  // --- operator state that survives a restart (operator_overrides.h) ---
  // Called under the lock after every operator change (Place with commit, Release, SetPowerCap, SetNodeHealth)
  // with everything operators have set. When it fails the change is undone and the call returns Unavailable,
  // so that a change the caller sees succeed is always saved. Unset: nothing is saved.
  using StateSink = OperatorOverrides::StateSink;
  void SetStateSink(StateSink sink);
  // Puts back a state a sink saved (call it before the API server's pods arrive and before SetSynced): caps,
  // operator health and failed GPUs, and allocations (recorded as running, even above a cap lowered since).
  // Names must exist (LoadStateFile checks them). On error the service may hold part of the state.
  absl::Status RestoreOperatorState(const v1::ClusterState& state);
  // What operators have set: their allocations, their health overrides and failed GPUs, changed caps.
  v1::ClusterState OperatorState() const;
  // --- measured power (measured_rack_power.h) ---
  // Applies one poll's readings under the lock (allocations made since the previous poll still count on top).
  // Returns log lines for what changed: the telemetry state (once per transition) and racks entering or leaving
  // overdraw, with the pods on them and, with on_overdraw: lower_limits, the lowered watts per GPU.
  // With on_overdraw: requeue_newest, evicts the newest pods of each rack that just went over its cap (the
  // core's PlanRequeueNewest), outside the lock; the lines say what was done.
  std::vector<std::string> ApplyPowerReadings(const TelemetrySettings& settings, const PowerReadings& readings);
  TelemetryState telemetry_state() const;
  // Saves the operator state when the allocations counted oversubscribed changed since the last save (the timer's
  // beat; a bind does not wait on the disk). After a crash between two beats the pods booked meanwhile count what
  // they declare: the safe side. Drops, once synced, those no longer in the ledger.
  void SaveOversubscribed();
  // Gauges: estimated, measured and counted draw per rack, telemetry freshness, overdraw alarms.
  void RenderTelemetryMetrics(std::string* out) const;
  // GET /limits (published_limits.h): every held allocation with pods and the watts per GPU its GPUs should
  // have now (steered, else declared); the generation moves when any of it changes.
  LimitsDocument SteeredLimits();

  StateSnapshot Snapshot() const;
  // Gauges in the Prometheus text format: rack draw/cap/headroom, free GPUs per domain, reservations.
  void RenderStateMetrics(std::string* out) const;
  absl::Status CheckInvariants() const;
  // Calls f(const Ledger&) under the lock (tests, diagnostics).
  template <typename F>
  auto WithLedger(F f) const {
    std::lock_guard<std::mutex> lock(mu_);
    return f(ledger_);
  }
  std::optional<std::string> NodeOfPod(const std::string& key) const;

 private:
  struct PodRecord {
    std::string uid;
    NodeId node = kNoId;
    std::string group;          // empty: placed alone
    std::string allocation_id;  // alone: its ledger id
    std::string owner;          // alone: its owner in the shared power ledger ("k8s/<namespace>/<uid>")
    bool confirmed = false;     // seen bound by the API server
    int64_t booked_ms = 0;
    int64_t priority = 0;                     // spec.priority
    int64_t start_unix_ms = 0;                // status.startTime once the API server shows it (else booked_ms dates it)
    int gpus = 0;                             // GPUs booked for it
    std::vector<std::string> counted_claims;  // shared claims whose GPUs its booking counts
  };
  struct PendingPod {
    PodInfo info;
    int64_t seen_ms = 0;
  };

  PlacementRequest SinglePodRequest(const PodInfo& pod) const;
  // policy.oversubscribe_pct: the core's CountOversubscribed with this face's telemetry (measured_rack_power.h).
  OversubscribedWatts CountLocked(const PlacementRequest& request) const;
  // The group's slots planned at the counted watts are remembered as counted oversubscribed.
  void RememberGroupLocked(const std::string& group, const OversubscribedWatts& count);
  // What a pod found running counts per GPU (it declares `declared`, 0: the node type's default): what it was
  // counted at before a restart, if it was oversubscribed then. `group`: its gang group, "" alone.
  Milliwatts RecoveredPerGpuLocked(const std::string& allocation_id, const std::string& group,
                                   Milliwatts declared) const;
  int64_t ArrivalWindowMs() const { return std::min(options_.gang_arrival_ms, options_.reservation_ttl_ms); }
  // Preemption: what the extender knows of a proposed victim (pod_preemption.h makes the choice).
  std::optional<KnownVictim> KnownVictimLocked(const std::string& uid, int64_t now_ms, int64_t wall_now_ms) const;
  // Books anew the pods DraPods queued (a claim's holder left, an object they depend on changed).
  void ReapplyLocked(int64_t now_ms);
  // Plans (reserves) a group's missing slots: for a ComputeDomain on labelled nodes, within one clique (the one
  // with the most free GPUs that fits it); otherwise as GangReservations::Ensure does.
  absl::StatusOr<PlacementOutcome> EnsureGroupLocked(const PodInfo& pod, int size, const PlacementRequest& per_pod,
                                                     int64_t now_ms);
  // The same at the watts `per_pod` asks (EnsureGroupLocked counts them first).
  absl::StatusOr<PlacementOutcome> EnsureGroupAtLocked(const PodInfo& pod, int size, const PlacementRequest& per_pod,
                                                       int64_t now_ms);
  // Free GPUs on `node`: the allocated ones first, then the lowest; 0 when fewer than `count` are free.
  GpuMask PickGpus(NodeId node, int count, GpuMask allocated) const;
  // Books a pod's GPUs on `node` for bind: its gang slot, or a placement of the pod alone on that node
  // (committed). Returns the refusal to send back, or "" with `record`'s group or allocation id set.
  std::string BookLocked(const std::string& key, const ResolvedPod& pod, NodeId node, int64_t now_ms,
                         PodRecord* record);
  // Books a pod the API server shows running on `node` (a restart, a pod bound by another scheduler): into its
  // group's slot (adopted when none is free), or alone at what it counted before. False: its GPUs are held.
  bool BookRunningLocked(const std::string& key, const ResolvedPod& pod, NodeId node, int64_t now_ms,
                         PodRecord* record);
  // Undoes a booking whose binding the API server refused (unless its watch already confirmed the pod).
  void UndoBooking(const std::string& key, const std::string& group, const std::string& allocation_id);
  // Releases a pod placed alone (or an operator's job): through the shared ledger when there is one, else from
  // the extender's ledger; it no longer counts oversubscribed.
  void ReleaseAloneLocked(const std::string& owner, const std::string& allocation_id);
  std::vector<ledger::OwnAllocation> OwnAllocationsLocked() const;
  // Each allocation's pods: alone, by its ledger id; in a group, by the slot it was bound to (free slots and
  // operators' allocations have none).
  absl::flat_hash_map<std::string, std::vector<std::string>> PodsByAllocationLocked() const;
  void Remember(const PodInfo& pod, int64_t now_ms);
  void RememberGpuFree(const PodInfo& pod, int64_t now_ms);
  void ReleaseRecord(const std::string& key);
  void ApplyPodLocked(const PodInfo& pod, int64_t now_ms);
  void RefreshHealth(NodeId node);
  FilterResult FilterGroup(const PodInfo& pod, const std::vector<NodeId>& ids, int64_t now_ms);
  // When the group was first tried (now, the first time); bounded like pending_.
  int64_t GroupFirstTry(const std::string& group, int64_t now_ms);
  // The candidates' ids: the cached resolution, or one made now into *scratch.
  const std::vector<NodeId>& CandidateIds(const CandidateNodes& candidates, std::vector<NodeId>* scratch) const;
  // Saves the operator state through the sink; on failure runs `undo` and returns Unavailable.
  absl::Status PersistLocked(const std::function<void()>& undo);

  std::unique_ptr<Topology> topology_;
  CandidateNodeCache candidate_cache_;
  ExtenderOptions options_;

  PodBinder* binder_;
  ExtenderMetrics* metrics_;

  mutable std::mutex mu_;
  Ledger ledger_;
  GangReservations gangs_;
  bool synced_ = false;
  absl::flat_hash_map<std::string, PodRecord> pods_;  // by "namespace/name"
  absl::flat_hash_map<std::string, std::string> uid_to_key_;
  absl::flat_hash_map<std::string, PendingPod> pending_;  // seen by filter, not yet bound
  // Pods filter saw ask for no GPU (a DRA cluster sends every pod): bind posts them without booking.
  absl::flat_hash_map<std::string, int64_t> gpu_free_pending_;
  DraPods dra_;              // claims, ComputeDomains, pod groups; the bound pods depending on them; node cliques
  int64_t last_now_ms_ = 0;  // the latest time a caller passed in (for pods booked anew on a deletion)
  // When filter first tried to plan a group that has no reservation yet: how long it has waited, for the
  // policy's preferred_wait_s bound (pods carry no time limit, so only the bound can hold a group: PreferredHoldsOut).
  // Monotonic, so a restart starts the clock again (the group waits longer, never shorter than the policy says).
  absl::flat_hash_map<std::string, int64_t> group_first_try_ms_;
  std::vector<NodeHealth> api_health_;  // by NodeId: the API server's view (not Ready, cordoned)
  OperatorOverrides operator_;          // operators' allocations and health overrides, and their sink
  MeasuredRackPower power_;  // the last poll's outcome and settings, the overdraw answer, the telemetry gauges
  // Allocations counted at less than they declare (policy.oversubscribe_pct): their declared watts go to steering
  // and /limits; saved with the operator state. Groups' entries as restored, by group, for pods adopted into new
  // slots after a restart (slot numbers are not kept); cleared once synced.
  OversubscribedAllocations oversubscribed_;
  absl::flat_hash_map<std::string, OversubscribedAllocation> restored_groups_;
  PublishedLimits published_limits_;  // what GET /limits last answered, to move its generation on changes
  int64_t unknown_node_pods_ = 0;
  int64_t recovery_conflicts_ = 0;
  SharedLedgerLink shared_ledger_;  // the gate to the shared power ledger (none: the ledger above alone decides)
};

}  // namespace rackwise::k8s
