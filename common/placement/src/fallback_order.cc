// See fallback_order.h.
#include "rackwise/fallback_order.h"

#include <algorithm>

#include "rackwise/shadow_time.h"

namespace rackwise {

bool UnderBackfillRule(const PlacementRequest& request, const PlacementPolicy& policy) {
  return request.started_by_backfill && request.locality.value_or(policy.default_locality) == Locality::kPreferred;
}

bool BackfillHoldsOut(const PlacementRequest& request, const PlacementPolicy& policy) {
  if (!UnderBackfillRule(request, policy)) return false;
  if (!request.fewest_domains_in_seconds || !request.time_limit_seconds)
    return PreferredWantsEstimate(policy, Locality::kPreferred, request.waited_seconds);
  return PreferredHoldsOut(policy, request.waited_seconds, request.fewest_domains_in_seconds,
                           request.time_limit_seconds);
}

std::vector<std::vector<NodeId>> FallbackNodeSets(const Topology& topology, const PlacementDecision& decision,
                                                  Locality locality, const std::vector<NodeId>& allowed) {
  std::vector<std::vector<NodeId>> sets;
  auto add = [&sets](std::vector<NodeId> set) {
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    if (set.empty() || (!sets.empty() && sets.back() == set)) return;
    sets.push_back(std::move(set));
  };
  std::vector<NodeId> chosen;
  std::vector<char> in_domain(topology.domains().size(), 0);
  for (const NodeGpus& ng : decision.nodes) {
    chosen.push_back(ng.node);
    in_domain[topology.nodes()[ng.node].domain] = 1;
  }
  add(chosen);
  std::vector<NodeId> domains;
  for (DomainId d = 0; d < static_cast<DomainId>(in_domain.size()); ++d) {
    if (in_domain[d])
      domains.insert(domains.end(), topology.domains()[d].nodes.begin(), topology.domains()[d].nodes.end());
  }
  add(std::move(domains));
  if (locality == Locality::kRequired) return sets;
  std::vector<NodeId> racks;
  for (const RackPower& rp : decision.racks) {
    racks.insert(racks.end(), topology.racks()[rp.rack].nodes.begin(), topology.racks()[rp.rack].nodes.end());
  }
  add(std::move(racks));
  add(allowed);
  return sets;
}

}  // namespace rackwise
