// The reservation the head of a lane's queue gets (EASY backfill, topology- and power-aware): its shadow time,
// its nodes, and the watts its racks and power domains can spare for jobs that outlast it. See simulator_replay.h.
#include <algorithm>

#include "simulator_replay.h"

namespace rackwise::sim {

absl::Status Replay::Reserve(int head, double now) {
  EndReservation(now);
  reservation_.job = head;
  reservation_.made = now;
  reservation_.relaxed = Relaxed(head, now);
  const TraceJob& job = jobs_[head];
  const std::vector<std::optional<Milliwatts>> reading = SetReadingAside();
  // A `preferred` head whose hold-out runs out before its shadow time is placed there by the same rule.
  std::optional<double> fewest_at;
  if (MayHoldOut(head, now)) fewest_at = FewestAt(head, now);
  const std::vector<ExpectedEnd> ends = Ends(now);
  sim::Choice choice;
  auto walk = [&] {
    return ShadowTime(ledger_, ends, free_gpus_, job.gpus, [&](const Ledger& shadow_state, double in) {
      ++attempts_;
      sim::Pending pending{now + in - head_since_[head], std::nullopt};
      if (fewest_at) pending.fewest_in_s = std::max(0.0, *fewest_at - now - in);
      choice = sim::Choice{};
      if (policy_->Choose(shadow_state, job, pending, /*backfill=*/false, &choice) != sim::Outcome::kStart)
        return false;
      // The watts the head will draw are worked out in the shadow state (the ledger is restored afterwards).
      if (policy_->commit_mode() == CommitMode::kEnforce) Budget(choice);
      return true;
    });
  };
  absl::StatusOr<std::optional<double>> shadow = walk();
  // Another lane's draw may keep the head out even once all of this lane's jobs have ended. This lane does not
  // know when that draw falls (a scheduler sees only its own jobs' ends), so the head reserves what it would
  // get if the other lane gave its watts back: the nodes and watts are then held from this lane's backfill.
  if (shadow.ok() && !*shadow && BelowCeiling()) {
    ApplyCaps(rack_ceiling_, pd_ceiling_);
    shadow = walk();
    ApplyCaps(rack_cap_, pd_cap_);
  }
  if (!shadow.ok()) return shadow.status();
  if (*shadow) {
    reservation_.shadow = now + **shadow;
    for (const NodeGpus& ng : choice.nodes) reservation_.nodes.push_back(ng.node);
    std::sort(reservation_.nodes.begin(), reservation_.nodes.end());
  }
  PutReadingBack(reading);
  failed_shapes_.clear();  // the fenced nodes changed
  return absl::OkStatus();
}

void Replay::Budget(const sim::Choice& choice) {
  const double reserve = t_.policy().power_reserve_fraction;
  for (const NodeGpus& ng : choice.nodes) {
    const RackId r = t_.nodes()[ng.node].rack;
    const Milliwatts w = GpuCount(ng.gpus) * (choice.per_gpu > 0 ? choice.per_gpu : t_.type_of(ng.node).per_gpu);
    AddNeed(&reservation_.racks, r, w, ledger_.RackRoom(r, reserve));
    for (PowerDomainId pd : t_.racks()[r].power_chain)
      AddNeed(&reservation_.power_domains, pd, w, ledger_.PowerDomainRoom(pd, reserve));
  }
}

void Replay::AddNeed(std::vector<std::pair<int, Milliwatts>>* budgets, int id, Milliwatts need, Milliwatts room) {
  auto it = std::find_if(budgets->begin(), budgets->end(), [id](const auto& b) { return b.first == id; });
  if (it == budgets->end()) {
    budgets->push_back({id, room - need});
  } else {
    it->second -= need;
  }
}

void Replay::Spend(const SimPlacement& p) {
  for (const NodeGpus& ng : p.nodes) {
    const RackId r = t_.nodes()[ng.node].rack;
    const Milliwatts w = GpuCount(ng.gpus) * (p.per_gpu > 0 ? p.per_gpu : t_.type_of(ng.node).per_gpu);
    for (auto& [id, budget] : reservation_.racks)
      if (id == r) budget -= w;
    for (PowerDomainId pd : t_.racks()[r].power_chain)
      for (auto& [id, budget] : reservation_.power_domains)
        if (id == pd) budget -= w;
  }
}

void Replay::Fence(bool on) {
  if (on == fenced_) return;
  fenced_ = on;
  for (NodeId n : reservation_.nodes) ledger_.SetNodeHealth(n, on ? NodeHealth::kDrained : NodeHealth::kUp);
  // The lane's caps (the described ones unless another lane draws under them) are what to restore. Lowered caps
  // are set from the counted draws (the estimates unless telemetry is on), the draws Commit checks.
  const double keep = 1.0 - t_.policy().power_reserve_fraction;
  const auto lowered = [keep](Milliwatts draw, Milliwatts budget, Milliwatts cap) {
    return std::min(cap, static_cast<Milliwatts>(static_cast<double>(draw + std::max<Milliwatts>(0, budget)) / keep));
  };
  for (const auto& [r, budget] : reservation_.racks)
    ledger_.SetRackCap(r, on ? lowered(ledger_.counted_rack_draw(r), budget, rack_cap_[r]) : rack_cap_[r]);
  for (const auto& [p, budget] : reservation_.power_domains) {
    const Milliwatts cap = pd_cap_[p];
    ledger_.SetPowerDomainCap(p, on ? lowered(ledger_.counted_power_domain_draw(p), budget, cap) : cap);
  }
}

}  // namespace rackwise::sim
