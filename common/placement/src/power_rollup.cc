// See rackwise/power_rollup.h.
#include "rackwise/power_rollup.h"

namespace rackwise {

void PowerScratch::Add(const Rack& rack_info, RackId r, Milliwatts mw) {
  if (rack_[r] == 0) touched_racks_.push_back(r);
  rack_[r] += mw;
  for (PowerDomainId p : rack_info.power_chain) {
    if (pd_[p] == 0) touched_pds_.push_back(p);
    pd_[p] += mw;
  }
}

void PowerScratch::Clear() {
  for (RackId r : touched_racks_) rack_[r] = 0;
  for (PowerDomainId p : touched_pds_) pd_[p] = 0;
  touched_racks_.clear();
  touched_pds_.clear();
}

void PowerScratch::Resize(size_t racks, size_t power_domains) {
  if (rack_.size() == racks && pd_.size() == power_domains) return;
  rack_.assign(racks, 0);
  pd_.assign(power_domains, 0);
  touched_racks_.clear();
  touched_pds_.clear();
}

}  // namespace rackwise
