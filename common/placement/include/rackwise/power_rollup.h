// Power rolled up the hierarchy (racks under power domains under power domains): how many GPUs the caps let
// through, and the scratch a plan in progress keeps of the watts it has taken. Used by the placer, by the refusal
// report ("how many GPUs could this job ever get, now or on an empty cluster") and by the simulator's quick "might
// it fit" bound, which must all agree on what the caps allow.
#pragma once

#include <algorithm>
#include <vector>

#include "rackwise/topology.h"

namespace rackwise {

// Watts a plan in progress has taken, so that domains sharing a rack or a row do not spend the same headroom.
// Dense vectors with a touched list: O(1) per operation and cheap to reset.
class PowerScratch {
 public:
  PowerScratch(size_t racks, size_t power_domains) : rack_(racks, 0), pd_(power_domains, 0) {}
  Milliwatts rack(RackId r) const { return rack_[r]; }
  Milliwatts power_domain(PowerDomainId p) const { return pd_[p]; }
  // Adds `mw` to rack r and to every power domain above it.
  void Add(const Rack& rack_info, RackId r, Milliwatts mw);
  void Clear();
  // Sized for another cluster: zeroed at the new sizes; the same sizes keep what is there (Clear empties it).
  void Resize(size_t racks, size_t power_domains);

 private:
  std::vector<Milliwatts> rack_, pd_;
  std::vector<RackId> touched_racks_;
  std::vector<PowerDomainId> touched_pds_;
};

// The second half of PowerLimitedGpus: `below` holds, per power domain, the GPUs that reach it from the racks
// directly under it; each domain passes at most domain_room(p) / per_gpu of them (with what its child domains
// pass) up, deepest first. Returns what reaches the top from the domains (racks under none are the caller's).
template <typename DomainRoom>
long long RollUpPowerDomains(const Topology& t, Milliwatts per_gpu, DomainRoom domain_room,
                             std::vector<long long>* below) {
  long long total = 0;
  for (PowerDomainId p : t.power_domains_deepest_first()) {
    long long g = (*below)[p];
    if (per_gpu > 0) g = std::min<long long>(g, std::max<Milliwatts>(0, domain_room(p)) / per_gpu);
    const PowerDomainId parent = t.power_domains()[p].parent;
    (parent == kNoId ? total : (*below)[parent]) += g;
  }
  return total;
}

// Rack r offers rack_gpus(r) GPUs and passes at most rack_room(r) / per_gpu of them; the racks and child domains
// under power domain p pass at most domain_room(p) / per_gpu up, deepest domains first. Returns what reaches the
// top. A per_gpu <= 0 limits nothing. `below` is scratch (one entry per power domain), so hot callers allocate once.
template <typename RackGpus, typename RackRoom, typename DomainRoom>
long long PowerLimitedGpus(const Topology& t, Milliwatts per_gpu, RackGpus rack_gpus, RackRoom rack_room,
                           DomainRoom domain_room, std::vector<long long>* below) {
  auto limit = [per_gpu](long long gpus, Milliwatts room) {
    if (per_gpu <= 0) return gpus;
    return std::min<long long>(gpus, std::max<Milliwatts>(0, room) / per_gpu);
  };
  below->assign(t.power_domains().size(), 0);
  long long total = 0;
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    const long long g = limit(rack_gpus(r), rack_room(r));
    const PowerDomainId p = t.racks()[r].power_domain;
    (p == kNoId ? total : (*below)[p]) += g;
  }
  return total + RollUpPowerDomains(t, per_gpu, domain_room, below);
}

}  // namespace rackwise
