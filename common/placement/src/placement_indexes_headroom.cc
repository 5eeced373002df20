// The placer's headroom index: the most any rack can still take, kept up the power tree on every change so that
// the placer asks it in O(1), and the kept extremes. See MaxRackHeadroom in placement_indexes.h.
//
// Every power domain keeps the largest value among its children (the racks directly below it, at their own room,
// and the power domains directly below it, at their headroom) and its own headroom, the least of that and its
// room. A change to one rack walks its power chain once; a level rescans its children only when the child that
// held its largest value went down, so a commit costs O(chain length) in the usual case.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "placement_indexes.h"

namespace rackwise::internal {
namespace {
constexpr Milliwatts kNoRoomToKeep = std::numeric_limits<Milliwatts>::max();  // a rack or domain with no free GPU

// A rack's or power domain's room shared among the free GPUs below it: per_gpu <= this exactly when
// free * per_gpu fits.
Milliwatts RoomPerFreeGpu(Milliwatts room, long long free) {
  if (free <= 0) return kNoRoomToKeep;
  return room < 0 ? -1 : room / free;
}

// The rooms the indexes keep: the policy's reserve kept.
Milliwatts RackRoomWithPolicyReserve(const Ledger& ledger, RackId rack) {
  return ledger.RackRoom(rack, ledger.topology().policy().power_reserve_fraction);
}
Milliwatts PowerDomainRoomWithPolicyReserve(const Ledger& ledger, PowerDomainId domain) {
  return ledger.PowerDomainRoom(domain, ledger.topology().policy().power_reserve_fraction);
}
}  // namespace

Milliwatts PlacementIndexes::BestChildOf(PowerDomainId domain) const {
  Milliwatts best = kNoHeadroom;
  const std::vector<RackId>& racks = domain == kNoId ? kept_.root_racks : topology_->power_domains()[domain].racks;
  const std::vector<PowerDomainId>& pds = domain == kNoId ? root_pds_ : topology_->power_domains()[domain].children;
  for (RackId r : racks) best = std::max(best, kept_.rack_room[r]);
  for (PowerDomainId p : pds) best = std::max(best, pd_headroom_[p]);
  return best;
}

void PlacementIndexes::RebuildHeadroom(const Ledger& ledger) {
  const Topology& t = *topology_;
  kept_.rack_room.resize(t.racks().size());
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r)
    kept_.rack_room[r] = RackRoomWithPolicyReserve(ledger, r);
  kept_.pd_room.resize(t.power_domains().size());
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p)
    kept_.pd_room[p] = PowerDomainRoomWithPolicyReserve(ledger, p);
  pd_headroom_.assign(t.power_domains().size(), kNoHeadroom);
  pd_child_best_.assign(t.power_domains().size(), kNoHeadroom);
  for (PowerDomainId p : t.power_domains_deepest_first()) {  // children before their parents
    pd_child_best_[p] = BestChildOf(p);
    pd_headroom_[p] = std::min(kept_.pd_room[p], pd_child_best_[p]);
  }
  top_headroom_ = BestChildOf(kNoId);
  least_rack_room_.Assign(t.racks().size());
  least_rack_room_per_free_.Assign(t.racks().size());
  most_rack_free_.Assign(t.racks().size());
  pd_free_.assign(t.power_domains().size(), 0);
  extremes_stale_.clear();
  rack_extremes_stale_.assign(t.racks().size(), 0);
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    const int free = kept_.RackFreeGpus(r);
    SetRackExtremes(r, free);
    for (PowerDomainId p : t.racks()[r].power_chain) pd_free_[p] += free;
  }
  least_pd_room_.Assign(t.power_domains().size());
  least_pd_room_per_free_.Assign(t.power_domains().size());
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p) KeepPowerDomainRoom(p);
  power_groups_.AllRacksChanged();  // every rack's room may have moved
}

void PlacementIndexes::RackGroupChanged(RackId rack) {
  power_groups_.RackChanged(rack);
  KeepRoomExtremes(rack);
}

void PlacementIndexes::KeepPowerDomainRoom(PowerDomainId domain) const {
  const Milliwatts room = kept_.pd_room[domain];
  least_pd_room_.Set(domain, pd_free_[domain] > 0 ? room : kNoRoomToKeep);
  least_pd_room_per_free_.Set(domain, RoomPerFreeGpu(room, pd_free_[domain]));
}

void PlacementIndexes::KeepRoomExtremes(RackId rack) {
  if (rack_extremes_stale_.empty() || rack_extremes_stale_[rack]) return;  // (construction: RebuildHeadroom fills)
  rack_extremes_stale_[rack] = 1;
  extremes_stale_.push_back(rack);
}

void PlacementIndexes::RefreshExtremes() const {
  for (RackId rack : extremes_stale_) {
    rack_extremes_stale_[rack] = 0;
    RefreshRackExtremes(rack);
  }
  extremes_stale_.clear();
}

void PlacementIndexes::SetRackExtremes(RackId rack, int free) const {
  most_rack_free_.Set(rack, free);
  least_rack_room_.Set(rack, free > 0 ? kept_.rack_room[rack] : kNoRoomToKeep);
  least_rack_room_per_free_.Set(rack, RoomPerFreeGpu(kept_.rack_room[rack], free));
}

void PlacementIndexes::RefreshRackExtremes(RackId rack) const {
  const int free = kept_.RackFreeGpus(rack);
  const int delta = free - most_rack_free_.at(rack);  // the free GPUs last carried up the chain
  SetRackExtremes(rack, free);
  // Every domain of the chain: a draw change moves each one's room even when the free GPUs stay.
  for (PowerDomainId p : topology_->racks()[rack].power_chain) {
    pd_free_[p] += delta;
    KeepPowerDomainRoom(p);
  }
}

void PlacementIndexes::RackPowerChanged(const Ledger& ledger, RackId rack) {
  const Milliwatts old_value = kept_.rack_room[rack];
  kept_.rack_room[rack] = RackRoomWithPolicyReserve(ledger, rack);
  CarryHeadroomUp(ledger, topology_->racks()[rack].power_domain, old_value, kept_.rack_room[rack]);
  RackGroupChanged(rack);  // its room and (after a commit or release) its tallies moved
}

void PlacementIndexes::PowerDomainPowerChanged(const Ledger& ledger, PowerDomainId domain) {
  const Milliwatts old_value = pd_headroom_[domain];
  kept_.pd_room[domain] = PowerDomainRoomWithPolicyReserve(ledger, domain);
  KeepPowerDomainRoom(domain);
  pd_headroom_[domain] = std::min(kept_.pd_room[domain], pd_child_best_[domain]);
  CarryHeadroomUp(ledger, topology_->power_domains()[domain].parent, old_value, pd_headroom_[domain]);
}

void PlacementIndexes::CarryHeadroomUp(const Ledger& ledger, PowerDomainId parent, Milliwatts old_value,
                                       Milliwatts new_value) {
  // Every domain of the chain is visited even when a child's value did not move: a draw change moves the room
  // of every domain above the rack.
  for (PowerDomainId p = parent;; p = topology_->power_domains()[p].parent) {
    Milliwatts& best = p == kNoId ? top_headroom_ : pd_child_best_[p];
    if (new_value >= best) {
      best = new_value;
    } else if (old_value == best && new_value < old_value) {
      best = BestChildOf(p);  // the child that held the largest value went down
    }
    if (p == kNoId) return;
    old_value = pd_headroom_[p];
    kept_.pd_room[p] = PowerDomainRoomWithPolicyReserve(ledger, p);
    pd_headroom_[p] = std::min(kept_.pd_room[p], best);
    new_value = pd_headroom_[p];
  }
}

absl::Status PlacementIndexes::CheckHeadroom(const Ledger& ledger) const {
  const Topology& t = *topology_;
  RefreshExtremes();
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p)
    if (kept_.pd_room[p] != PowerDomainRoomWithPolicyReserve(ledger, p))
      return absl::InternalError(absl::StrCat("power domain ", t.power_domains()[p].name, " kept room stale"));
  Milliwatts top = kNoHeadroom;
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    if (kept_.rack_room[r] != RackRoomWithPolicyReserve(ledger, r))
      return absl::InternalError(absl::StrCat("rack ", t.racks()[r].name, " kept room stale"));
    Milliwatts h = RackRoomWithPolicyReserve(ledger, r);
    for (PowerDomainId p : t.racks()[r].power_chain) h = std::min(h, PowerDomainRoomWithPolicyReserve(ledger, p));
    top = std::max(top, h);
  }
  if (top != top_headroom_)
    return absl::InternalError(absl::StrCat("largest rack headroom kept as ", top_headroom_, ", is ", top));
  // The least rooms and the most free GPUs in one rack, against a pass over every rack and power domain.
  Milliwatts least_rack = kNoRoomToKeep, least_rack_per_free = kNoRoomToKeep;
  Milliwatts least_pd = kNoRoomToKeep, least_pd_per_free = kNoRoomToKeep;
  int most_free = 0;
  std::vector<long long> pd_free(t.power_domains().size(), 0);
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    int free = 0;
    for (NodeId n : t.racks()[r].nodes) free += ledger.free_gpu_count(n);
    most_free = std::max(most_free, free);
    const Milliwatts room = RackRoomWithPolicyReserve(ledger, r);
    if (free > 0) least_rack = std::min(least_rack, room);
    least_rack_per_free = std::min(least_rack_per_free, RoomPerFreeGpu(room, free));
    for (PowerDomainId p : t.racks()[r].power_chain) pd_free[p] += free;
  }
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p) {
    if (pd_free[p] != pd_free_[p])
      return absl::InternalError(absl::StrCat("power domain ", t.power_domains()[p].name, " free GPUs stale"));
    const Milliwatts room = PowerDomainRoomWithPolicyReserve(ledger, p);
    if (pd_free[p] > 0) least_pd = std::min(least_pd, room);
    least_pd_per_free = std::min(least_pd_per_free, RoomPerFreeGpu(room, pd_free[p]));
  }
  if (least_rack_per_free != LeastRackRoomPerFreeGpu())
    return absl::InternalError(
        absl::StrCat("least rack room per free GPU kept as ", LeastRackRoomPerFreeGpu(), ", is ", least_rack_per_free));
  if (least_rack != LeastRackRoomWithFree() || least_pd != LeastPowerDomainRoomWithFree() ||
      least_pd_per_free != LeastPowerDomainRoomPerFreeGpu() || most_free != MostRackFree())
    return absl::InternalError(absl::StrCat("least rooms or most free kept as ", LeastRackRoomWithFree(), "/",
                                            LeastPowerDomainRoomWithFree(), "/", LeastPowerDomainRoomPerFreeGpu(), "/",
                                            MostRackFree(), ", are ", least_rack, "/", least_pd, "/", least_pd_per_free,
                                            "/", most_free));
  return absl::OkStatus();
}

}  // namespace rackwise::internal
