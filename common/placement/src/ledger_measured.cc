// The ledger's measured-power accounting (telemetry). See "Measured power" in ledger.h for the contract.
#include <algorithm>
#include <cmath>

#include "placement_indexes.h"
#include "rackwise/ledger.h"

namespace rackwise {

std::optional<Milliwatts> Ledger::measured_rack_draw(RackId rack) const { return rack_measured_[rack]; }

std::optional<Milliwatts> Ledger::measured_rack_draw_now(RackId rack) const {
  if (!rack_measured_[rack]) return std::nullopt;
  return *rack_measured_[rack] + added_since_reading_[rack] + added_before_reading_[rack];
}

void Ledger::SetMeasuredDraw(const std::vector<std::optional<Milliwatts>>& rack_watts, double reclaim_fraction,
                             bool count_recent) {
  Changed();
  // Out-of-range fractions are clamped rather than trusted: above 0.5 the counted draw could fall below what the
  // rack measures (validation keeps reclaim_pct within 0..50 anyway).
  reclaim_fraction_ = std::isfinite(reclaim_fraction) ? std::clamp(reclaim_fraction, 0.0, 0.5) : 0.0;
  for (RackId r = 0; r < static_cast<RackId>(rack_measured_.size()); ++r) {
    std::optional<Milliwatts> m = r < static_cast<RackId>(rack_watts.size()) ? rack_watts[r] : std::nullopt;
    if (m && *m < 0) m.reset();
    rack_measured_[r] = m;
    added_before_reading_[r] = count_recent ? added_since_reading_[r] : 0;
    added_since_reading_[r] = 0;
    Readjust(r);
  }
  indexes_->RebuildHeadroom(*this);
}

void Ledger::ClearMeasuredDraw() { SetMeasuredDraw({}, 0, false); }

void Ledger::Readjust(RackId rack) {
  Milliwatts adjust = 0;
  if (std::optional<Milliwatts> m = measured_rack_draw_now(rack)) {
    const Milliwatts estimate = rack_draw_[rack];
    // Truncation rounds the reclaimed share down, so the counted draw never falls below the measured one.
    adjust = *m >= estimate ? *m - estimate
                            : -static_cast<Milliwatts>(reclaim_fraction_ * static_cast<double>(estimate - *m));
  }
  const Milliwatts delta = adjust - rack_adjust_[rack];
  if (delta == 0) return;
  rack_adjust_[rack] = adjust;
  for (PowerDomainId p : topology_->racks()[rack].power_chain) pd_adjust_[p] += delta;
}

}  // namespace rackwise
