// The ledger's headroom index: the most any rack can still take, kept up the power tree on every change so that
// the placer asks it in O(1). See MaxRackHeadroom in ledger.h.
//
// Every power domain keeps the largest value among its children (the racks directly below it, at their own room,
// and the power domains directly below it, at their headroom) and its own headroom, the least of that and its
// room. A change to one rack walks its power chain once; a level rescans its children only when the child that
// held its largest value went down, so a commit costs O(chain length) in the usual case.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "rackwise/ledger.h"

namespace rackwise {
namespace {
constexpr Milliwatts kNoRoomToKeep = std::numeric_limits<Milliwatts>::max();  // a rack or domain with no free GPU

// A rack's or power domain's room shared among the free GPUs below it: per_gpu <= this exactly when
// free * per_gpu fits.
Milliwatts RoomPerFreeGpu(Milliwatts room, long long free) {
  if (free <= 0) return kNoRoomToKeep;
  return room < 0 ? -1 : room / free;
}
}  // namespace

Milliwatts Ledger::RackRoomWithPolicyReserve(RackId rack) const {
  return RackRoom(rack, topology_->policy().power_reserve_fraction);
}

Milliwatts Ledger::BestChildOf(PowerDomainId domain) const {
  Milliwatts best = kNoHeadroom;
  const std::vector<RackId>& racks = domain == kNoId ? root_racks_ : topology_->power_domains()[domain].racks;
  const std::vector<PowerDomainId>& pds = domain == kNoId ? root_pds_ : topology_->power_domains()[domain].children;
  for (RackId r : racks) best = std::max(best, rack_room_kept_[r]);
  for (PowerDomainId p : pds) best = std::max(best, pd_headroom_[p]);
  return best;
}

void Ledger::RebuildHeadroom() {
  const Topology& t = *topology_;
  const double reserve = t.policy().power_reserve_fraction;
  rack_room_kept_.resize(t.racks().size());
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) rack_room_kept_[r] = RackRoomWithPolicyReserve(r);
  pd_headroom_.assign(t.power_domains().size(), kNoHeadroom);
  pd_child_best_.assign(t.power_domains().size(), kNoHeadroom);
  for (PowerDomainId p : t.power_domains_deepest_first()) {  // children before their parents
    pd_child_best_[p] = BestChildOf(p);
    pd_headroom_[p] = std::min(PowerDomainRoom(p, reserve), pd_child_best_[p]);
  }
  top_headroom_ = BestChildOf(kNoId);
  least_rack_room_.Assign(t.racks().size());
  least_rack_room_per_free_.Assign(t.racks().size());
  most_rack_free_.Assign(t.racks().size());
  pd_free_.assign(t.power_domains().size(), 0);
  extremes_stale_.clear();
  rack_extremes_stale_.assign(t.racks().size(), 0);
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    const int free = RackFree(r);
    SetRackExtremes(r, free);
    for (PowerDomainId p : t.racks()[r].power_chain) pd_free_[p] += free;
  }
  least_pd_room_.Assign(t.power_domains().size());
  least_pd_room_per_free_.Assign(t.power_domains().size());
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p) KeepPowerDomainRoom(p);
  std::fill(group_stale_.begin(), group_stale_.end(), 1);  // every rack's room may have moved
}

int Ledger::RackFree(RackId rack) const {
  long long free = 0;
  for (const RackTypeTally& tally : rack_tallies_[rack]) free += tally.up_free_gpus;
  return static_cast<int>(free);
}

void Ledger::KeepPowerDomainRoom(PowerDomainId domain) const {
  const Milliwatts room = PowerDomainRoom(domain, topology_->policy().power_reserve_fraction);
  least_pd_room_.Set(domain, pd_free_[domain] > 0 ? room : kNoRoomToKeep);
  least_pd_room_per_free_.Set(domain, RoomPerFreeGpu(room, pd_free_[domain]));
}

void Ledger::KeepRoomExtremes(RackId rack) {
  if (rack_extremes_stale_.empty() || rack_extremes_stale_[rack]) return;  // (construction: RebuildHeadroom fills)
  rack_extremes_stale_[rack] = 1;
  extremes_stale_.push_back(rack);
}

void Ledger::RefreshExtremes() const {
  for (RackId rack : extremes_stale_) {
    rack_extremes_stale_[rack] = 0;
    RefreshRackExtremes(rack);
  }
  extremes_stale_.clear();
}

void Ledger::SetRackExtremes(RackId rack, int free) const {
  most_rack_free_.Set(rack, free);
  least_rack_room_.Set(rack, free > 0 ? rack_room_kept_[rack] : kNoRoomToKeep);
  least_rack_room_per_free_.Set(rack, RoomPerFreeGpu(rack_room_kept_[rack], free));
}

void Ledger::RefreshRackExtremes(RackId rack) const {
  const int free = RackFree(rack);
  const int delta = free - most_rack_free_.at(rack);  // the free GPUs last carried up the chain
  SetRackExtremes(rack, free);
  // Every domain of the chain: a draw change moves each one's room even when the free GPUs stay.
  for (PowerDomainId p : topology_->racks()[rack].power_chain) {
    pd_free_[p] += delta;
    KeepPowerDomainRoom(p);
  }
}

void Ledger::RackPowerChanged(RackId rack) {
  const Milliwatts old_value = rack_room_kept_[rack];
  rack_room_kept_[rack] = RackRoomWithPolicyReserve(rack);
  CarryHeadroomUp(topology_->racks()[rack].power_domain, old_value, rack_room_kept_[rack]);
  RackGroupChanged(rack);  // its room and (after a commit or release) its tallies moved
}

void Ledger::PowerDomainPowerChanged(PowerDomainId domain) {
  const Milliwatts old_value = pd_headroom_[domain];
  KeepPowerDomainRoom(domain);
  pd_headroom_[domain] =
      std::min(PowerDomainRoom(domain, topology_->policy().power_reserve_fraction), pd_child_best_[domain]);
  CarryHeadroomUp(topology_->power_domains()[domain].parent, old_value, pd_headroom_[domain]);
}

void Ledger::CarryHeadroomUp(PowerDomainId parent, Milliwatts old_value, Milliwatts new_value) {
  const double reserve = topology_->policy().power_reserve_fraction;
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
    pd_headroom_[p] = std::min(PowerDomainRoom(p, reserve), best);
    new_value = pd_headroom_[p];
  }
}

absl::Status Ledger::CheckHeadroom() const {
  const Topology& t = *topology_;
  RefreshExtremes();
  Milliwatts top = kNoHeadroom;
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    if (rack_room_kept_[r] != RackRoomWithPolicyReserve(r))
      return absl::InternalError(absl::StrCat("rack ", t.racks()[r].name, " kept room stale"));
    Milliwatts h = RackRoomWithPolicyReserve(r);
    for (PowerDomainId p : t.racks()[r].power_chain)
      h = std::min(h, PowerDomainRoom(p, t.policy().power_reserve_fraction));
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
    for (NodeId n : t.racks()[r].nodes) free += free_gpu_count(n);
    most_free = std::max(most_free, free);
    if (free > 0) least_rack = std::min(least_rack, RackRoomWithPolicyReserve(r));
    least_rack_per_free = std::min(least_rack_per_free, RoomPerFreeGpu(RackRoomWithPolicyReserve(r), free));
    for (PowerDomainId p : t.racks()[r].power_chain) pd_free[p] += free;
  }
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p) {
    if (pd_free[p] != pd_free_[p])
      return absl::InternalError(absl::StrCat("power domain ", t.power_domains()[p].name, " free GPUs stale"));
    const Milliwatts room = PowerDomainRoom(p, t.policy().power_reserve_fraction);
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

}  // namespace rackwise
