// What the simulator integrates over time: cluster energy, GPU-seconds allocated, and the power drawn above every
// rack and power-domain cap (kW-seconds) and how often a draw crossed a cap. Draws are what the hardware really
// draws (RealDraw: measured watts where the trace has them), not what the ledger counts, so that a job drawing
// more than it declared is caught; caps are the ledger's.
#pragma once

#include <vector>

#include "rackwise/ledger.h"
#include "rackwise/simulator.h"
#include "simulator_draw.h"

namespace rackwise::sim {

class Meter {
 public:
  // Both must outlive the meter.
  Meter(const Ledger& ledger, const RealDraw& draw);

  // Integrates the current state from the last time up to `t` (t never goes back).
  void Advance(double t);
  // Re-reads the draws of these racks and every power domain above them (after a commit or a release).
  void Changed(const std::vector<RackId>& racks, int gpu_delta);

  double energy_mwh() const { return energy_mw_s_ / 1e9 / 3600.0; }
  double rack_violation_kws() const { return rack_over_mw_s_ / 1e6; }
  double domain_violation_kws() const { return pd_over_mw_s_ / 1e6; }
  // Times a rack's or power domain's draw rose above its cap (from at or under it).
  long long cap_excursions() const { return excursions_; }
  double peak_rack_kw() const { return static_cast<double>(peak_rack_mw_) / 1e6; }
  double busy_gpu_seconds() const { return busy_gpu_s_; }
  double now() const { return now_; }

 private:
  const Ledger& ledger_;
  const RealDraw& draw_;
  double now_ = 0;
  bool started_ = false;
  std::vector<Milliwatts> rack_draw_, rack_over_, pd_over_;
  Milliwatts total_draw_ = 0, rack_over_sum_ = 0, pd_over_sum_ = 0, peak_rack_mw_ = 0;
  long long allocated_gpus_ = 0, excursions_ = 0;
  double energy_mw_s_ = 0, rack_over_mw_s_ = 0, pd_over_mw_s_ = 0, busy_gpu_s_ = 0;
  std::vector<char> pd_seen_;
};

// The meter's power and energy figures into `m` (violations, excursions, peak rack, energy, and GPU-hours per MWh
// from m->gpu_hours).
void AddPowerMetrics(const Meter& meter, SimMetrics* m);

}  // namespace rackwise::sim
