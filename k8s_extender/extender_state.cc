// The extender service's view of the cluster (pods and nodes from the API server), its operator API (place,
// release, caps, health) and its state gauges. See extender_service.h.
#include <algorithm>
#include <bit>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "extender_service.h"
#include "prometheus_text.h"
#include "rackwise/cluster_state.h"
#include "rackwise/power_bounds.h"

namespace rackwise::k8s {
namespace {

int Severity(NodeHealth h) { return h == NodeHealth::kUp ? 0 : h == NodeHealth::kDrained ? 1 : 2; }

}  // namespace

void ExtenderService::SetSynced(bool synced) {
  std::lock_guard<std::mutex> lock(mu_);
  synced_ = synced;
  // The API server's list is in: the shared ledger learns the whole k8s/ list now, not a beat later.
  if (synced_ && shared_ledger_.active()) shared_ledger_.Sync(ledger_, OwnAllocationsLocked());
}

bool ExtenderService::synced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_;
}

void ExtenderService::ReleaseRecord(const std::string& key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
  if (!it->second.group.empty()) {
    gangs_.ReleasePod(it->second.group, key);
  } else {
    ReleaseAloneLocked(it->second.owner, it->second.allocation_id);
  }
  // A shared claim this pod counted passes to another pod using it (booked anew by ReapplyLocked).
  dra_.PassOn(it->second.counted_claims, key);
  uid_to_key_.erase(it->second.uid);
  pods_.erase(it);
}

void ExtenderService::ApplyPod(const PodInfo& pod, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  last_now_ms_ = now_ms;
  ApplyPodLocked(pod, now_ms);
  ReapplyLocked(now_ms);
}

// Whether a booked pod must be booked anew: its GPU count changed (a claim allocated fewer than its largest
// alternative, a shared claim passed to it), or the scheduler's allocated GPUs are known and differ from the
// ones booked. Gang slots keep what the group's plan gave them.
static bool NeedsNewBooking(const Ledger& ledger, int booked_gpus, const std::string& allocation_id, int gpus,
                            GpuMask allocated) {
  if (booked_gpus != gpus) return true;
  if (std::popcount(allocated) != gpus) return false;
  const Allocation* a = ledger.Find(allocation_id);
  return a != nullptr && a->nodes.size() == 1 && a->nodes[0].gpus != allocated;
}

void ExtenderService::ApplyPodLocked(const PodInfo& raw, int64_t now_ms) {
  const std::string key = raw.Key();
  dra_.Track(raw);
  auto existing = pods_.find(key);
  if (existing != pods_.end() && !raw.uid.empty() && !existing->second.uid.empty() && existing->second.uid != raw.uid) {
    ReleaseRecord(key);  // a new pod under an old name
    existing = pods_.end();
  }
  const ResolvedPod resolved = dra_.Resolve(raw, raw.Holds() ? raw.node_name : "");
  const PodInfo& pod = resolved.info;
  if (pod.gpus == 0 || !pod.Holds()) {
    if (existing != pods_.end()) ReleaseRecord(key);
    if (!pod.node_name.empty() || pod.phase == "Succeeded" || pod.phase == "Failed") pending_.erase(key);
    return;
  }
  std::optional<NodeId> node = topology_->FindNode(pod.node_name);
  if (!node) {
    ++unknown_node_pods_;
    return;
  }
  if (existing != pods_.end() && existing->second.node == *node && existing->second.group.empty() &&
      NeedsNewBooking(ledger_, existing->second.gpus, existing->second.allocation_id, pod.gpus, resolved.allocated)) {
    ReleaseRecord(key);
    existing = pods_.end();
  }
  if (existing != pods_.end()) {
    if (existing->second.node == *node) {
      existing->second.confirmed = true;
      existing->second.priority = pod.priority;
      existing->second.start_unix_ms = pod.start_unix_ms;
      if (existing->second.uid.empty() && !pod.uid.empty()) {
        existing->second.uid = pod.uid;
        uid_to_key_[pod.uid] = key;
      }
      return;
    }
    ReleaseRecord(key);
  }
  pending_.erase(key);
  PodRecord record;
  record.uid = pod.uid;
  record.node = *node;
  record.confirmed = true;
  record.booked_ms = now_ms;
  record.priority = pod.priority;
  record.start_unix_ms = pod.start_unix_ms;
  record.gpus = pod.gpus;
  record.counted_claims = resolved.counted_claims;
  if (!BookRunningLocked(key, resolved, *node, now_ms, &record)) {
    ++recovery_conflicts_;
    return;
  }
  dra_.Hold(record.counted_claims, key);
  if (!record.uid.empty()) uid_to_key_[record.uid] = key;
  pods_[key] = std::move(record);
}

bool ExtenderService::BookRunningLocked(const std::string& key, const ResolvedPod& resolved, NodeId node,
                                        int64_t now_ms, PodRecord* record) {
  const PodInfo& pod = resolved.info;
  const Milliwatts per_gpu = pod.watts_per_gpu > 0 ? WattsToMilliwatts(pod.watts_per_gpu) : 0;
  if (!pod.group.empty()) {
    record->group = pod.group;
    if (!gangs_.Assign(pod.group, key, node, now_ms, options_.reservation_ttl_ms)) {
      GpuMask gpus = PickGpus(node, pod.gpus, resolved.allocated);
      const Milliwatts counted = RecoveredPerGpuLocked("", pod.group, per_gpu);
      if (gpus == 0 || !gangs_.Adopt(pod.group, pod.group_size, key, node, gpus, counted).ok()) {
        return false;
      }
      if (const GangSlot* slot = gangs_.Find(pod.group)->SlotOf(key); slot != nullptr && counted != per_gpu) {
        const OversubscribedAllocation& was = restored_groups_.at(pod.group);
        oversubscribed_.Placed(slot->allocation_id,
                               {true, MilliwattsToWatts(was.counted), MilliwattsToWatts(was.declared), ""});
      }
    }
  } else {
    GpuMask gpus = PickGpus(node, pod.gpus, resolved.allocated);
    Allocation a;
    a.id = absl::StrCat("pod/", key);
    a.nodes.push_back({node, gpus});
    a.per_gpu = RecoveredPerGpuLocked(a.id, "", per_gpu);
    if (gpus == 0 || !ledger_.Commit(a, CommitMode::kRecover).ok()) {
      return false;
    }
    record->allocation_id = a.id;
    // Running already: recorded here alone; the next reconcile with the shared ledger (the first after a
    // restart, since the gate starts in fallback) records it there.
    record->owner = PodOwner(key, pod.uid);
  }
  return true;
}

Milliwatts ExtenderService::RecoveredPerGpuLocked(const std::string& allocation_id, const std::string& group,
                                                  Milliwatts declared) const {
  if (group.empty()) return oversubscribed_.Counted(allocation_id, declared);
  // A group's slots were planned together at one count; after a restart a pod may land in a slot of another number.
  auto it = restored_groups_.find(group);
  if (it == restored_groups_.end() || (declared != 0 && declared != it->second.declared)) return declared;
  return it->second.counted;
}

void ExtenderService::DeletePod(const PodInfo& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = pod.Key();
  auto it = pods_.find(key);
  if (it != pods_.end() && (pod.uid.empty() || it->second.uid.empty() || it->second.uid == pod.uid)) {
    ReleaseRecord(key);
  }
  if (const PodInfo* d = dra_.Tracked(key); d != nullptr && (pod.uid.empty() || d->uid.empty() || d->uid == pod.uid)) {
    dra_.Untrack(key);
  }
  pending_.erase(key);
  ReapplyLocked(last_now_ms_);
}

void ExtenderService::ReplacePods(const std::vector<PodInfo>& pods, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  last_now_ms_ = now_ms;
  absl::flat_hash_map<std::string, bool> listed;
  for (const PodInfo& p : pods) listed[p.Key()] = true;
  std::vector<std::string> gone;
  for (const auto& [key, rec] : pods_) {
    if (listed.contains(key)) continue;
    if (rec.confirmed || now_ms - rec.booked_ms > options_.assume_ttl_ms) gone.push_back(key);
  }
  for (const std::string& key : gone) {
    dra_.Untrack(key);
    ReleaseRecord(key);
  }
  for (const PodInfo& p : pods) ApplyPodLocked(p, now_ms);
  ReapplyLocked(now_ms);
  // A relist (after 410 Gone, or a restart of the watch) may hold pods the watch never showed: the shared
  // ledger learns the whole list on the next beat.
  if (synced_ && shared_ledger_.active()) shared_ledger_.MarkReconcileDue();
}

void ExtenderService::RefreshHealth(NodeId node) {
  NodeHealth a = api_health_[node], o = operator_.health(node);
  ledger_.SetNodeHealth(node, Severity(a) >= Severity(o) ? a : o);
}

void ExtenderService::ApplyNode(const std::string& name, bool ready, bool unschedulable) {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<NodeId> node = topology_->FindNode(name);
  if (!node) return;
  api_health_[*node] = !ready ? NodeHealth::kDown : unschedulable ? NodeHealth::kDrained : NodeHealth::kUp;
  RefreshHealth(*node);
}

absl::StatusOr<PlacementOutcome> ExtenderService::Place(const PlacementRequest& request, bool commit,
                                                        OversubscribedWatts* counted) {
  std::lock_guard<std::mutex> lock(mu_);
  if (commit && request.id.empty()) return absl::InvalidArgumentError("id: required to place");
  if (commit && (request.id.rfind("pod/", 0) == 0 || request.id.find('#') != std::string::npos)) {
    return absl::InvalidArgumentError("id: \"pod/...\" and ids with '#' are reserved for Kubernetes pods");
  }
  if (commit && ledger_.Find(request.id) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("id ", request.id, " is already placed"));
  }
  // The operator's job counts less than it declares when the core counts it oversubscribed, like a pod's.
  const OversubscribedWatts count = CountLocked(request);
  if (counted != nullptr) *counted = count;
  absl::StatusOr<PlacementOutcome> outcome = Placer::Place(ledger_, WithOversubscription(request, count));
  if (!outcome.ok() || !commit) return outcome;
  if (const auto* d = std::get_if<PlacementDecision>(&*outcome)) {
    // Through the shared ledger when there is one, like a bind: Slurm must see an operator's GPUs too.
    const std::string owner = OperatorOwner(request.id);
    if (absl::Status s = shared_ledger_.CommitAlone(ledger_, owner, d->ToAllocation(request.id)); !s.ok()) return s;
    operator_.AddAllocation(request.id);
    oversubscribed_.Placed(request.id, count);
    absl::Status saved = PersistLocked([&] {
      ReleaseAloneLocked(owner, request.id);
      operator_.RemoveAllocation(request.id);
    });
    if (!saved.ok()) return saved;
  }
  return outcome;
}

bool ExtenderService::Release(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  const Allocation* held = ledger_.Find(id);
  if (!operator_.HoldsAllocation(id) || held == nullptr) return false;
  const Allocation old = *held;
  operator_.RemoveAllocation(id);
  ReleaseAloneLocked(OperatorOwner(id), id);
  absl::Status saved = PersistLocked([&] {
    (void)ledger_.Commit(old, CommitMode::kRecover);  // it held these GPUs a moment ago
    operator_.AddAllocation(id);
    // The shared ledger released it already: the next beat's reconcile books it there again.
    if (shared_ledger_.active()) shared_ledger_.MarkReconcileDue();
  });
  return saved.ok();
}

absl::Status ExtenderService::SetPowerCap(const std::string& name, double kilowatts) {
  if (absl::Status bad = CheckCapKw(kilowatts); !bad.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("power_cap_kw: ", bad.message()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  Milliwatts cap = WattsToMilliwatts(kilowatts * 1000.0);
  if (std::optional<RackId> r = topology_->FindRack(name)) {
    const Milliwatts old = ledger_.rack_cap(*r);
    ledger_.SetRackCap(*r, cap);
    return PersistLocked([&] { ledger_.SetRackCap(*r, old); });
  }
  if (std::optional<PowerDomainId> p = topology_->FindPowerDomain(name)) {
    const Milliwatts old = ledger_.power_domain_cap(*p);
    ledger_.SetPowerDomainCap(*p, cap);
    return PersistLocked([&] { ledger_.SetPowerDomainCap(*p, old); });
  }
  return absl::NotFoundError(absl::StrCat("no rack or power domain named \"", name, "\""));
}

absl::Status ExtenderService::SetNodeHealth(const std::string& name, NodeHealth health,
                                            const std::vector<int>& failed_gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<NodeId> node = topology_->FindNode(name);
  if (!node) return absl::NotFoundError(absl::StrCat("no node named \"", name, "\""));
  const int gpus = topology_->nodes()[*node].gpus;
  for (int g : failed_gpus) {
    if (g < 0 || g >= gpus) {
      return absl::InvalidArgumentError(
          absl::StrCat("failed_gpus: ", g, " is not a GPU index of ", name, " (0..", gpus - 1, ")"));
    }
  }
  const NodeHealth old_health = operator_.health(*node);
  const GpuMask old_failed = ledger_.failed_gpus(*node);
  auto set = [&](NodeHealth h, auto failed) {
    operator_.SetHealth(*node, h);
    RefreshHealth(*node);
    for (int g = 0; g < gpus; ++g) ledger_.SetGpuFailed(*node, g, failed(g));
  };
  set(health, [&](int g) { return std::find(failed_gpus.begin(), failed_gpus.end(), g) != failed_gpus.end(); });
  return PersistLocked([&] { set(old_health, [&](int g) { return (old_failed >> g) & 1; }); });
}

StateSnapshot ExtenderService::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  StateSnapshot s;
  const auto& racks = topology_->racks();
  for (RackId r = 0; r < static_cast<RackId>(racks.size()); ++r) {
    s.racks.push_back({racks[r].name, ledger_.rack_draw(r), ledger_.rack_cap(r), ledger_.RackHeadroom(r)});
  }
  const auto& domains = topology_->domains();
  for (DomainId d = 0; d < static_cast<DomainId>(domains.size()); ++d) {
    s.domains.push_back({domains[d].name, racks[domains[d].rack].name, ledger_.domain_free_gpus(d), domains[d].gpus});
  }
  const auto& feeds = topology_->power_domains();
  const double reserve = topology_->policy().power_reserve_fraction;
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(feeds.size()); ++p) {
    s.power_domains.push_back({feeds[p].name, ledger_.power_domain_draw(p), ledger_.counted_power_domain_draw(p),
                               ledger_.power_domain_cap(p), ledger_.PowerDomainRoom(p, reserve)});
  }
  s.allocations = static_cast<int>(ledger_.allocation_count());
  s.reservations = static_cast<int>(gangs_.all().size());
  s.free_reserved_slots = gangs_.total_free_slots();
  return s;
}

void ExtenderService::RenderStateMetrics(std::string* out) const {
  StateSnapshot s = Snapshot();
  daemon::Gauge(out, "rackwise_rack_draw_watts", "What a rack draws now: idle draw of its nodes plus allocations.");
  for (const RackSnapshot& r : s.racks) {
    absl::StrAppend(out, "rackwise_rack_draw_watts{rack=\"", daemon::Label(r.name), "\"} ", MilliwattsToWatts(r.draw),
                    "\n");
  }
  daemon::Gauge(out, "rackwise_rack_cap_watts", "A rack's power cap in force.");
  for (const RackSnapshot& r : s.racks) {
    absl::StrAppend(out, "rackwise_rack_cap_watts{rack=\"", daemon::Label(r.name), "\"} ", MilliwattsToWatts(r.cap),
                    "\n");
  }
  daemon::Gauge(out, "rackwise_rack_headroom_watts", "Power a rack can still take (rack and every domain above it).");
  for (const RackSnapshot& r : s.racks) {
    absl::StrAppend(out, "rackwise_rack_headroom_watts{rack=\"", daemon::Label(r.name), "\"} ",
                    MilliwattsToWatts(r.headroom), "\n");
  }
  daemon::Gauge(out, "rackwise_domain_free_gpus", "Free GPUs on up nodes of an NVLink domain.");
  for (const DomainSnapshot& d : s.domains) {
    absl::StrAppend(out, "rackwise_domain_free_gpus{domain=\"", daemon::Label(d.name), "\",rack=\"",
                    daemon::Label(d.rack), "\"} ", d.free_gpus, "\n");
  }
  // Power domains (rows, halls): the same figures as racks, so a dashboard can stack rack draw under its row.
  const std::pair<const char*, const char*> feed_gauges[] = {
      {"rackwise_power_domain_draw_watts", "What a power domain draws now: idle draw below it plus allocations."},
      {"rackwise_power_domain_counted_watts", "What placements count for a power domain (max of estimate, measured)."},
      {"rackwise_power_domain_cap_watts", "A power domain's cap in force."},
      {"rackwise_power_domain_room_watts", "Power a power domain can still take under its cap less the reserve."},
  };
  for (size_t g = 0; g < std::size(feed_gauges); ++g) {
    daemon::Gauge(out, feed_gauges[g].first, feed_gauges[g].second);
    for (const PowerDomainSnapshot& p : s.power_domains) {
      const Milliwatts value[] = {p.draw, p.counted, p.cap, p.room};
      absl::StrAppend(out, feed_gauges[g].first, "{power_domain=\"", daemon::Label(p.name), "\"} ",
                      MilliwattsToWatts(value[g]), "\n");
    }
  }
  RenderTelemetryMetrics(out);
  daemon::Gauge(out, "rackwise_allocations", "Allocations held in the ledger (pods, gang slots, operator placements).");
  absl::StrAppend(out, "rackwise_allocations ", s.allocations, "\n");
  daemon::Gauge(out, "rackwise_gang_reservations", "Groups of pods holding a reservation.");
  absl::StrAppend(out, "rackwise_gang_reservations ", s.reservations, "\n");
  daemon::Gauge(out, "rackwise_gang_free_slots", "Reserved pod slots not yet bound.");
  absl::StrAppend(out, "rackwise_gang_free_slots ", s.free_reserved_slots, "\n");
  absl::StrAppend(out,
                  "# HELP rackwise_candidate_list_cache_total Candidate node lists taken from the cache (hit) or "
                  "decoded afresh (miss).\n# TYPE rackwise_candidate_list_cache_total counter\n",
                  "rackwise_candidate_list_cache_total{result=\"hit\"} ", candidate_cache_.hits(), "\n",
                  "rackwise_candidate_list_cache_total{result=\"miss\"} ", candidate_cache_.misses(), "\n");
  std::lock_guard<std::mutex> lock(mu_);
  daemon::Gauge(out, "rackwise_synced", "1 once the ledger has been rebuilt from the API server (or standalone).");
  absl::StrAppend(out, "rackwise_synced ", synced_ ? 1 : 0, "\n");
  absl::StrAppend(out,
                  "# HELP rackwise_pods_on_unknown_nodes_total GPU pods seen on nodes the description does not name.\n",
                  "# TYPE rackwise_pods_on_unknown_nodes_total counter\n", "rackwise_pods_on_unknown_nodes_total ",
                  unknown_node_pods_, "\n");
  absl::StrAppend(out, "# HELP rackwise_recovery_conflicts_total Running pods that could not be booked (GPUs held).\n",
                  "# TYPE rackwise_recovery_conflicts_total counter\n", "rackwise_recovery_conflicts_total ",
                  recovery_conflicts_, "\n");
  shared_ledger_.RenderMetrics(out);
}

void ExtenderService::SetSharedLedger(ledger::LedgerBooking* gate) {
  std::lock_guard<std::mutex> lock(mu_);
  shared_ledger_.SetGate(gate);
  gangs_.SetGate(gate);
}

void ExtenderService::ReleaseAloneLocked(const std::string& owner, const std::string& allocation_id) {
  oversubscribed_.Forget(allocation_id);
  shared_ledger_.ReleaseAlone(ledger_, owner, allocation_id);
}

std::vector<ledger::OwnAllocation> ExtenderService::OwnAllocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return OwnAllocationsLocked();
}

std::vector<ledger::OwnAllocation> ExtenderService::OwnAllocationsLocked() const {
  std::vector<ledger::OwnAllocation> own;
  for (const auto& [key, record] : pods_) {
    if (!record.group.empty()) continue;  // its slot is listed with its group below
    if (const Allocation* a = ledger_.Find(record.allocation_id)) own.push_back({record.owner, *a});
  }
  for (const auto& [id, placed] : operator_.allocations()) {
    if (const Allocation* a = ledger_.Find(id)) own.push_back({OperatorOwner(id), *a});
  }
  for (const auto& [group, reservation] : gangs_.all()) {
    for (const GangSlot& slot : reservation.slots) {
      if (const Allocation* a = ledger_.Find(slot.allocation_id))
        own.push_back({GangSlotOwner(slot.allocation_id), *a});
    }
  }
  return own;
}

void ExtenderService::SyncSharedLedger(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  // Before the API server's list the extender's own list is incomplete: a reconcile would release what runs.
  if (!synced_ || !shared_ledger_.TakeSyncBeat(now_ms, options_.ledger_sync_ms)) return;
  shared_ledger_.Sync(ledger_, OwnAllocationsLocked());
}

absl::flat_hash_map<std::string, std::vector<std::string>> ExtenderService::PodsByAllocationLocked() const {
  absl::flat_hash_map<std::string, std::vector<std::string>> pods_of;
  for (const auto& [key, record] : pods_) {
    if (!record.allocation_id.empty()) pods_of[record.allocation_id].push_back(key);
  }
  for (const auto& [group, reservation] : gangs_.all()) {
    for (const GangSlot& slot : reservation.slots) {
      if (!slot.pod.empty()) pods_of[slot.allocation_id].push_back(slot.pod);
    }
  }
  return pods_of;
}

LimitsDocument ExtenderService::SteeredLimits() {
  std::lock_guard<std::mutex> lock(mu_);
  absl::flat_hash_map<std::string, std::vector<SteeredPod>> pods_of;
  for (auto& [allocation, keys] : PodsByAllocationLocked()) {
    std::sort(keys.begin(), keys.end());
    for (const std::string& key : keys) {
      auto record = pods_.find(key);
      if (record == pods_.end() || record->second.node == kNoId) continue;
      const size_t slash = key.find('/');
      pods_of[allocation].push_back({key.substr(0, slash), key.substr(slash + 1), record->second.uid,
                                     topology_->nodes()[record->second.node].name});
    }
  }
  return published_limits_.Publish(ledger_, oversubscribed_, power_.steered_limits(), pods_of);
}

std::vector<std::string> ExtenderService::ApplyPowerReadings(const TelemetrySettings& settings,
                                                             const PowerReadings& readings) {
  std::vector<std::string> log;
  std::vector<std::pair<std::string, std::string>> victims;  // (pod key, why)
  {
    std::lock_guard<std::mutex> lock(mu_);
    log = power_.Apply(settings, readings, &ledger_, oversubscribed_);
    if (power_.requeues_newest()) {
      absl::flat_hash_map<std::string, std::string> pod_of;  // each allocation's one pod
      for (const auto& [allocation, keys] : PodsByAllocationLocked()) pod_of[allocation] = keys.back();
      victims = power_.NewestPodsOverCap(ledger_, pod_of, [&](const std::string& key) {
        auto record = pods_.find(key);
        return record == pods_.end() ? std::nullopt : std::optional<int64_t>(record->second.booked_ms);
      });
    }
  }
  // Evictions are calls to the API server: made outside the lock.
  for (const auto& [key, why] : victims) {
    const size_t slash = key.find('/');
    absl::Status s = binder_ ? binder_->EvictPod(key.substr(0, slash), key.substr(slash + 1))
                             : absl::FailedPreconditionError("standalone: no API server to evict through");
    log.push_back(
        s.ok() ? absl::StrCat("OVERDRAW: requeue_newest: evicted pod ", key, " (", why, ")")
               : absl::StrCat("OVERDRAW: requeue_newest: cannot evict pod ", key, " (", why, "): ", s.message()));
  }
  return log;
}

TelemetryState ExtenderService::telemetry_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return power_.state();
}

void ExtenderService::RenderTelemetryMetrics(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  power_.RenderMetrics(ledger_, oversubscribed_, out);
}

void ExtenderService::SetStateSink(StateSink sink) {
  std::lock_guard<std::mutex> lock(mu_);
  operator_.SetSink(std::move(sink));
}

v1::ClusterState ExtenderService::OperatorState() const {
  std::lock_guard<std::mutex> lock(mu_);
  return operator_.Capture(ledger_, oversubscribed_);
}

void ExtenderService::SaveOversubscribed() {
  std::lock_guard<std::mutex> lock(mu_);
  if (synced_) {
    restored_groups_.clear();
    oversubscribed_.Retain([&](const std::string& id) { return ledger_.Find(id) != nullptr; });
  }
  if (!oversubscribed_.TakeChanged() || !operator_.has_sink()) return;
  // Not saved: tried again on the next beat (the book stays marked changed).
  if (!operator_.Save(ledger_, oversubscribed_).ok()) oversubscribed_.MarkChanged();
}

absl::Status ExtenderService::PersistLocked(const std::function<void()>& undo) {
  return operator_.Persist(ledger_, oversubscribed_, undo);
}

absl::Status ExtenderService::RestoreOperatorState(const v1::ClusterState& state) {
  std::lock_guard<std::mutex> lock(mu_);
  v1::ClusterState ledger_part;  // caps and allocations go to the ledger as they are
  *ledger_part.mutable_caps() = state.caps();
  *ledger_part.mutable_allocations() = state.allocations();
  for (const v1::NodeStatus& status : state.nodes()) {
    std::optional<NodeId> node = topology_->FindNode(status.node());
    if (!node) return absl::InvalidArgumentError(absl::StrCat("state names unknown node '", status.node(), "'"));
    operator_.SetHealth(*node, NodeHealthFromProto(status.health()));
    RefreshHealth(*node);
    for (uint32_t gpu : status.failed_gpus()) {
      if (gpu >= static_cast<uint32_t>(topology_->nodes()[*node].gpus))
        return absl::InvalidArgumentError(absl::StrCat("node ", status.node(), " has no GPU ", gpu));
      ledger_.SetGpuFailed(*node, static_cast<int>(gpu), true);
    }
  }
  // Operator allocations counted oversubscribed are restored at their counted watts (the state holds those).
  oversubscribed_.Restore(state);
  for (const v1::OversubscribedAllocation& o : state.oversubscribed()) {
    const size_t slot = o.id().rfind('#');
    if (slot != std::string::npos && oversubscribed_.Find(o.id()) != nullptr)
      restored_groups_[o.id().substr(0, slot)] = *oversubscribed_.Find(o.id());
  }
  if (absl::Status s = ApplyClusterState(ledger_part, &ledger_); !s.ok()) return s;
  for (const v1::Allocation& a : state.allocations()) operator_.AddAllocation(a.id());
  return absl::OkStatus();
}

void ExtenderService::ReapplyLocked(int64_t now_ms) {
  // Booking a pod anew may release claims that queue other pods: bounded, since each round books holders.
  for (int round = 0; round < 8 && dra_.queued(); ++round) {
    for (const std::string& key : dra_.TakeQueued()) {
      const PodInfo* tracked = dra_.Tracked(key);
      if (tracked == nullptr) continue;
      const PodInfo raw = *tracked;
      ApplyPodLocked(raw, now_ms);
    }
  }
  dra_.ClearQueue();
}

void ExtenderService::SetNodeClique(const std::string& name, const std::string& clique) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::optional<NodeId> node = topology_->FindNode(name)) dra_.SetClique(*node, clique);
}

absl::Status ExtenderService::ApplyDraObject(DraKind kind, const Json& object, bool deleted, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  last_now_ms_ = now_ms;
  absl::Status applied = dra_.Apply(kind, object, deleted);
  ReapplyLocked(now_ms);
  return applied;
}

void ExtenderService::ReplaceDraObjects(DraKind kind, const std::vector<Json>& items, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  last_now_ms_ = now_ms;
  dra_.Replace(kind, items);
  ReapplyLocked(now_ms);
}

absl::Status ExtenderService::CheckInvariants() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ledger_.CheckInvariants();
}

std::optional<std::string> ExtenderService::NodeOfPod(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return std::nullopt;
  return topology_->nodes()[it->second.node].name;
}

}  // namespace rackwise::k8s
