// Internal to the placer: the fewest NVLink domains that can hold a job under nested power caps, exactly.
//
// Each domain offers some GPUs (its free GPUs, already limited by its own rack's room); each rack and each
// power domain above it passes at most its room's worth of GPUs. For a set of domains, the most the job can
// get is min(cap, sum of what the children pass) up the tree. Within a rack the best n domains are its n
// largest, so what a rack passes with n domains, min(room, sum of its n largest), is concave in n; capping a
// concave function and summing concave functions over children (max-plus convolution) keep it concave, and
// the convolution of concave functions is the merge of their gains sorted largest first. So the best n domains
// for the whole cluster are the n largest gains after every level's cap is applied, and the fewest domains is
// the first n whose gains add up to the job: exact, in O(D log D) for D offers.
//
// Every share is a multiple of the job's granule (gpus_per_node, or 1): offers and rooms are rounded down to
// it, so that the sums are too.
#pragma once

#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "rackwise/topology.h"

namespace rackwise::internal {

struct DomainOffer {
  DomainId domain = kNoId;
  int gpus = 0;  // what the domain could give the job, a multiple of the granule
};

struct FewestDomains {
  int count = 0;                  // 0: the offers cannot hold the job
  long long reachable = 0;        // the most GPUs all the offers together can give under the caps
  std::vector<DomainId> domains;  // `count` domains that hold the job together (largest gains first)
};

// `rack_gpus(r)` and `domain_gpus(p)`: the GPUs rack r and power domain p can still power for this job,
// rounded down to the granule (a large number when the job draws nothing).
template <typename RackGpus, typename DomainGpus>
FewestDomains FindFewestDomains(const Topology& t, absl::Span<const DomainOffer> offers, long long gpus,
                                RackGpus rack_gpus, DomainGpus domain_gpus);

// Implementation detail of the template above: the gains, merged and capped up the power tree.
struct DomainGain {
  long long gain;
  DomainId domain;
};
FewestDomains MergeGains(const Topology& t, absl::Span<const DomainOffer> offers, long long gpus,
                         const std::vector<long long>& rack_limit, const std::vector<long long>& pd_limit);

template <typename RackGpus, typename DomainGpus>
FewestDomains FindFewestDomains(const Topology& t, absl::Span<const DomainOffer> offers, long long gpus,
                                RackGpus rack_gpus, DomainGpus domain_gpus) {
  std::vector<long long> rack_limit(t.racks().size(), -1), pd_limit(t.power_domains().size(), -1);
  for (const DomainOffer& o : offers) {
    const RackId r = t.domains()[o.domain].rack;
    if (rack_limit[r] >= 0) continue;
    rack_limit[r] = rack_gpus(r);
    for (PowerDomainId p : t.racks()[r].power_chain)
      if (pd_limit[p] < 0) pd_limit[p] = domain_gpus(p);
  }
  return MergeGains(t, offers, gpus, rack_limit, pd_limit);
}

}  // namespace rackwise::internal
