// Time integrals for the simulator's metrics. See simulator_meter.h.
#include "simulator_meter.h"

#include <algorithm>

namespace rackwise::sim {

Meter::Meter(const Ledger& ledger, const RealDraw& draw) : ledger_(ledger), draw_(draw) {
  const Topology& t = ledger.topology();
  rack_draw_.resize(t.racks().size());
  rack_over_.assign(t.racks().size(), 0);
  pd_over_.assign(t.power_domains().size(), 0);
  pd_seen_.assign(t.power_domains().size(), 0);
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    rack_draw_[r] = draw.rack(r);
    total_draw_ += rack_draw_[r];
    rack_over_[r] = std::max<Milliwatts>(0, rack_draw_[r] - ledger.rack_cap(r));
    rack_over_sum_ += rack_over_[r];
    peak_rack_mw_ = std::max(peak_rack_mw_, rack_draw_[r]);
  }
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(pd_over_.size()); ++p) {
    pd_over_[p] = std::max<Milliwatts>(0, draw.power_domain(p) - ledger.power_domain_cap(p));
    pd_over_sum_ += pd_over_[p];
  }
}

void Meter::Advance(double t) {
  if (!started_) {
    started_ = true;
    now_ = t;
    return;
  }
  const double dt = t - now_;
  if (dt <= 0) return;
  energy_mw_s_ += static_cast<double>(total_draw_) * dt;
  rack_over_mw_s_ += static_cast<double>(rack_over_sum_) * dt;
  pd_over_mw_s_ += static_cast<double>(pd_over_sum_) * dt;
  busy_gpu_s_ += static_cast<double>(allocated_gpus_) * dt;
  now_ = t;
}

void Meter::Changed(const std::vector<RackId>& racks, int gpu_delta) {
  const Topology& t = ledger_.topology();
  allocated_gpus_ += gpu_delta;
  std::vector<PowerDomainId> pds;
  for (RackId r : racks) {
    const Milliwatts draw = draw_.rack(r);
    total_draw_ += draw - rack_draw_[r];
    rack_draw_[r] = draw;
    peak_rack_mw_ = std::max(peak_rack_mw_, draw);
    const Milliwatts over = std::max<Milliwatts>(0, draw - ledger_.rack_cap(r));
    if (over > 0 && rack_over_[r] == 0) ++excursions_;
    rack_over_sum_ += over - rack_over_[r];
    rack_over_[r] = over;
    for (PowerDomainId p : t.racks()[r].power_chain) {
      if (pd_seen_[p]) continue;
      pd_seen_[p] = 1;
      pds.push_back(p);
    }
  }
  for (PowerDomainId p : pds) {
    pd_seen_[p] = 0;
    const Milliwatts over = std::max<Milliwatts>(0, draw_.power_domain(p) - ledger_.power_domain_cap(p));
    if (over > 0 && pd_over_[p] == 0) ++excursions_;
    pd_over_sum_ += over - pd_over_[p];
    pd_over_[p] = over;
  }
}

void AddPowerMetrics(const Meter& meter, SimMetrics* m) {
  m->rack_violation_kws = meter.rack_violation_kws();
  m->domain_violation_kws = meter.domain_violation_kws();
  m->power_violation_kws = m->rack_violation_kws + m->domain_violation_kws;
  m->cap_excursions = meter.cap_excursions();
  m->peak_rack_kw = meter.peak_rack_kw();
  m->energy_mwh = meter.energy_mwh();
  if (m->energy_mwh > 0) m->gpu_hours_per_mwh = m->gpu_hours / m->energy_mwh;
}

}  // namespace rackwise::sim
