// Gang reservations on top of the core's Placer and Ledger (see the header for the model).
#include "gang_reservations.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "rackwise/placer.h"

namespace rackwise::k8s {
namespace {

// Splits a node's GPUs into pod-sized chunks, lowest indices first. Returns false if they do not divide.
bool SplitIntoPods(GpuMask mask, int pod_gpus, std::vector<GpuMask>* out) {
  if (pod_gpus <= 0 || std::popcount(mask) % pod_gpus != 0) return false;
  GpuMask chunk = 0;
  int in_chunk = 0;
  for (int i = 0; i < kMaxGpusPerNode; ++i) {
    GpuMask bit = GpuMask{1} << i;
    if (!(mask & bit)) continue;
    chunk |= bit;
    if (++in_chunk == pod_gpus) {
      out->push_back(chunk);
      chunk = 0;
      in_chunk = 0;
    }
  }
  return true;
}

}  // namespace

PlacementRequest GroupRequest(const std::string& group, int missing, const PlacementRequest& per_pod) {
  // One job of the missing pods' GPUs, split over nodes in whole pods: the core keeps every node's part a
  // multiple of the pod's GPUs (share_gpus), so the plan divides into slots as it is.
  PlacementRequest request = per_pod;
  request.id = group;
  request.gpus = missing * per_pod.gpus;
  request.gpus_per_node = 0;
  request.share_gpus = per_pod.gpus;
  return request;
}

int GangReservation::free_slots() const {
  return static_cast<int>(std::count_if(slots.begin(), slots.end(), [](const GangSlot& s) { return s.pod.empty(); }));
}
int GangReservation::assigned_slots() const { return static_cast<int>(slots.size()) - free_slots(); }
bool GangReservation::HasFreeSlotOn(NodeId node) const {
  return std::any_of(slots.begin(), slots.end(), [&](const GangSlot& s) { return s.node == node && s.pod.empty(); });
}
const GangSlot* GangReservation::SlotOf(const std::string& pod) const {
  for (const GangSlot& s : slots) {
    if (s.pod == pod) return &s;
  }
  return nullptr;
}

absl::StatusOr<PlacementOutcome> GangReservations::Ensure(const std::string& group, int size,
                                                          const PlacementRequest& per_pod, int64_t now_ms,
                                                          int64_t ttl_ms) {
  GangReservation& r = groups_[group];
  if (r.group.empty()) {
    r.group = group;
    r.pod_gpus = per_pod.gpus;
    r.expires_ms = now_ms + ttl_ms;
  }
  r.size = std::max(r.size, size);
  int missing = r.size - static_cast<int>(r.slots.size());
  if (missing <= 0) {
    PlacementDecision done;  // nothing to plan: the existing slots stand
    return PlacementOutcome(done);
  }
  const PlacementRequest request = GroupRequest(group, missing, per_pod);
  absl::StatusOr<PlacementOutcome> outcome = Placer::Place(*ledger_, request);
  std::vector<std::pair<NodeId, std::vector<GpuMask>>> split;
  if (outcome.ok() && std::holds_alternative<PlacementDecision>(*outcome)) {
    for (const NodeGpus& ng : std::get<PlacementDecision>(*outcome).nodes) {
      std::vector<GpuMask> chunks;
      if (!SplitIntoPods(ng.gpus, per_pod.gpus, &chunks)) {
        DropIfEmpty(group);
        return absl::InternalError(absl::StrCat("group ", group, ": the core returned shares that are not whole pods"));
      }
      split.emplace_back(ng.node, std::move(chunks));
    }
  }
  if (!outcome.ok() || std::holds_alternative<PlacementRefusal>(*outcome)) {
    DropIfEmpty(group);
    return outcome;
  }
  const PlacementDecision& decision = std::get<PlacementDecision>(*outcome);
  std::vector<GangSlot> added;
  for (const auto& [node, chunks] : split) {
    for (GpuMask chunk : chunks) {
      GangSlot slot;
      slot.allocation_id = absl::StrCat(group, "#", r.next_slot++);
      slot.node = node;
      slot.gpus = chunk;
      Allocation a;
      a.id = slot.allocation_id;
      a.nodes.push_back({node, chunk});
      a.per_gpu = decision.per_gpu;
      if (absl::Status s = BookSlot(a); !s.ok()) {
        for (const GangSlot& undo : added) ReleaseSlot(undo.allocation_id);
        DropIfEmpty(group);
        // The shared ledger's refusal is an answer (another owner took the room): the group waits.
        if (s.code() == absl::StatusCode::kFailedPrecondition && gate_ != nullptr) return s;
        return absl::InternalError(
            absl::StrCat("group ", group, ": the ledger refused the core's plan: ", s.message()));
      }
      added.push_back(std::move(slot));
    }
  }
  for (GangSlot& s : added) r.slots.push_back(std::move(s));
  r.expires_ms = std::max(r.expires_ms, now_ms + ttl_ms);
  return outcome;
}

std::optional<GangSlot> GangReservations::Assign(const std::string& group, const std::string& pod, NodeId node,
                                                 int64_t now_ms, int64_t ttl_ms) {
  auto it = groups_.find(group);
  if (it == groups_.end()) return std::nullopt;
  GangReservation& r = it->second;
  for (GangSlot& s : r.slots) {
    if (s.pod == pod) return s.node == node ? std::optional<GangSlot>(s) : std::nullopt;
  }
  for (GangSlot& s : r.slots) {
    if (s.node == node && s.pod.empty()) {
      s.pod = pod;
      r.expires_ms = std::max(r.expires_ms, now_ms + ttl_ms);
      r.arrived.insert(pod);
      r.last_arrival_ms = now_ms;  // a bind is progress too: never released sooner than the TTL rule would
      return s;
    }
  }
  return std::nullopt;
}

void GangReservations::Unassign(const std::string& group, const std::string& pod) {
  auto it = groups_.find(group);
  if (it == groups_.end()) return;
  for (GangSlot& s : it->second.slots) {
    if (s.pod == pod) s.pod.clear();
  }
}

absl::Status GangReservations::Adopt(const std::string& group, int size, const std::string& pod, NodeId node,
                                     GpuMask gpus, Milliwatts per_gpu) {
  GangReservation& r = groups_[group];
  if (r.group.empty()) {
    r.group = group;
    r.pod_gpus = std::popcount(gpus);
  }
  r.size = std::max(r.size, size);
  r.arrived.insert(pod);
  for (GangSlot& s : r.slots) {
    if (s.pod == pod && s.node == node) return absl::OkStatus();
  }
  for (GangSlot& s : r.slots) {
    if (s.node == node && s.pod.empty()) {
      s.pod = pod;
      return absl::OkStatus();
    }
  }
  GangSlot slot;
  slot.allocation_id = absl::StrCat(group, "#", r.next_slot++);
  slot.node = node;
  slot.gpus = gpus;
  slot.pod = pod;
  Allocation a;
  a.id = slot.allocation_id;
  a.nodes.push_back({node, gpus});
  a.per_gpu = per_gpu;
  if (absl::Status s = ledger_->Commit(a, CommitMode::kRecover); !s.ok()) {
    DropIfEmpty(group);
    return s;
  }
  r.slots.push_back(std::move(slot));
  return absl::OkStatus();
}

bool GangReservations::ReleasePod(const std::string& group, const std::string& pod) {
  auto it = groups_.find(group);
  if (it == groups_.end()) return false;
  auto& slots = it->second.slots;
  auto s = std::find_if(slots.begin(), slots.end(), [&](const GangSlot& x) { return x.pod == pod; });
  if (s == slots.end()) return false;
  ReleaseSlot(s->allocation_id);
  slots.erase(s);
  DropIfEmpty(group);
  return true;
}

void GangReservations::NoteArrival(const std::string& group, const std::string& pod, int64_t now_ms,
                                   int64_t window_ms) {
  auto it = groups_.find(group);
  if (it == groups_.end()) return;
  GangReservation& r = it->second;
  if (!r.arrived.insert(pod).second) return;
  r.last_arrival_ms = now_ms;
  r.arrival_window_ms = window_ms;
}

int GangReservations::YieldStalled(const std::string& except, int64_t now_ms, int64_t quiet_ms) {
  int released = 0;
  for (auto& [group, r] : groups_) {
    if (group != except && r.AwaitingPods() && r.arrival_window_ms > 0 && now_ms - r.last_arrival_ms >= quiet_ms) {
      released += ReleaseFreeSlots(r);
    }
  }
  std::erase_if(groups_, [](const auto& g) { return g.second.slots.empty(); });
  return released;
}

int GangReservations::ReleaseFreeSlots(GangReservation& r) {
  int released = 0;
  for (auto s = r.slots.begin(); s != r.slots.end();) {
    if (s->pod.empty()) {
      ReleaseSlot(s->allocation_id);
      s = r.slots.erase(s);
      ++released;
    } else {
      ++s;
    }
  }
  return released;
}

int GangReservations::Expire(int64_t now_ms) {
  int released = 0;
  for (auto it = groups_.begin(); it != groups_.end();) {
    GangReservation& r = it->second;
    const bool abandoned =
        r.AwaitingPods() && r.arrival_window_ms > 0 && now_ms - r.last_arrival_ms >= r.arrival_window_ms;
    if (r.expires_ms <= now_ms || abandoned) released += ReleaseFreeSlots(r);
    if (r.slots.empty() && (r.expires_ms <= now_ms || abandoned)) {
      it = groups_.erase(it);
    } else {
      ++it;
    }
  }
  return released;
}

void GangReservations::Clear() {
  for (auto& [g, r] : groups_) {
    for (const GangSlot& s : r.slots) ReleaseSlot(s.allocation_id);
  }
  groups_.clear();
}

const GangReservation* GangReservations::Find(const std::string& group) const {
  auto it = groups_.find(group);
  return it == groups_.end() ? nullptr : &it->second;
}

int GangReservations::total_free_slots() const {
  int n = 0;
  for (const auto& [g, r] : groups_) n += r.free_slots();
  return n;
}

absl::Status GangReservations::BookSlot(const Allocation& slot) {
  return ledger::BookOrCommit(gate_, *ledger_, GangSlotOwner(slot.id), slot);
}

void GangReservations::ReleaseSlot(const std::string& allocation_id) {
  ledger::ReleaseBooked(gate_, *ledger_, GangSlotOwner(allocation_id), allocation_id);
}

void GangReservations::DropIfEmpty(const std::string& group) {
  auto it = groups_.find(group);
  if (it != groups_.end() && it->second.slots.empty()) groups_.erase(it);
}

}  // namespace rackwise::k8s
