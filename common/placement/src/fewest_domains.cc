// The fewest NVLink domains under nested caps. See fewest_domains.h for why merging gains is exact.
#include "fewest_domains.h"

#include <algorithm>

namespace rackwise::internal {
namespace {

// Caps a list of gains (largest first) so that they add up to at most `limit`; drops what is left at zero.
void CapGains(long long limit, std::vector<DomainGain>* gains) {
  long long sum = 0;
  size_t kept = 0;
  for (const DomainGain& g : *gains) {
    const long long take = std::min(g.gain, std::max(0LL, limit - sum));
    if (take <= 0) break;  // gains are sorted: nothing after this passes either
    sum += take;
    (*gains)[kept++] = {take, g.domain};
  }
  gains->resize(kept);
}

// Largest first; equal gains keep their order (a rack's own domains stay in order, so each rack contributes
// a prefix of its list, which is what makes the merge a max-plus convolution).
void SortGains(std::vector<DomainGain>* gains) {
  std::stable_sort(gains->begin(), gains->end(),
                   [](const DomainGain& a, const DomainGain& b) { return a.gain > b.gain; });
}

}  // namespace

FewestDomains MergeGains(const Topology& t, absl::Span<const DomainOffer> offers, long long gpus,
                         const std::vector<long long>& rack_limit, const std::vector<long long>& pd_limit) {
  // One list per rack, then per power domain (deepest first), then the cluster.
  std::vector<std::vector<DomainGain>> rack_gains(t.racks().size()), pd_gains(t.power_domains().size());
  std::vector<RackId> racks;
  for (const DomainOffer& o : offers) {
    if (o.gpus <= 0) continue;
    const RackId r = t.domains()[o.domain].rack;
    if (rack_gains[r].empty()) racks.push_back(r);
    rack_gains[r].push_back({o.gpus, o.domain});
  }
  std::vector<DomainGain> top;
  for (RackId r : racks) {
    std::vector<DomainGain>& g = rack_gains[r];
    SortGains(&g);
    CapGains(rack_limit[r], &g);
    const PowerDomainId p = t.racks()[r].power_domain;
    std::vector<DomainGain>& up = p == kNoId ? top : pd_gains[p];
    up.insert(up.end(), g.begin(), g.end());
  }
  for (PowerDomainId p : t.power_domains_deepest_first()) {
    std::vector<DomainGain>& g = pd_gains[p];
    if (g.empty()) continue;
    SortGains(&g);
    CapGains(pd_limit[p], &g);
    const PowerDomainId parent = t.power_domains()[p].parent;
    std::vector<DomainGain>& up = parent == kNoId ? top : pd_gains[parent];
    up.insert(up.end(), g.begin(), g.end());
  }
  SortGains(&top);
  FewestDomains out;
  for (const DomainGain& g : top) out.reachable += g.gain;
  long long sum = 0;
  for (const DomainGain& g : top) {
    if (sum >= gpus) break;
    sum += g.gain;
    out.domains.push_back(g.domain);
  }
  if (sum < gpus) {
    out.domains.clear();
    return out;
  }
  out.count = static_cast<int>(out.domains.size());
  return out;
}

}  // namespace rackwise::internal
