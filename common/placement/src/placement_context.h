// Internal to the placer: one request evaluated against one node type, with the power it has tentatively
// taken so far. Answers "what could this node / domain / rack give this job" without mutating the ledger.
#pragma once

#include <vector>

#include "empty_cluster_memo.h"
#include "fewest_domains.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_request.h"
#include "rackwise/power_rollup.h"

namespace rackwise::internal {

class PlacementContext {
 public:
  // `allowed` is a per-node mask (empty: every node) built once per request.
  PlacementContext(const Ledger& ledger, const PlacementRequest& request, Locality locality, NodeTypeId type,
                   Milliwatts per_gpu, const std::vector<char>& allowed);

  const Ledger& ledger() const { return ledger_; }
  const Topology& topology() const { return topology_; }
  const PlacementRequest& request() const { return request_; }
  Locality locality() const { return locality_; }
  NodeTypeId type() const { return type_; }
  Milliwatts per_gpu() const { return per_gpu_; }
  int gpus() const { return request_.gpus; }
  int k() const { return request_.gpus_per_node; }  // 0: any split
  // A share of the job on one node is a multiple of this (k, else the request's share size, else 1).
  int granule() const { return ShareGranule(request_); }
  int RoundDown(int g) const { return g / granule() * granule(); }
  // What a node with `gpus` free could give the job, ignoring power: k (or 0) with gpus_per_node, else its free
  // GPUs in whole shares.
  int NodeShare(int gpus) const { return NodeShareOf(request_, gpus); }
  // Whether every free GPU counts (any split, no share size): then a domain gives its free GPUs, which the
  // ledger counts without visiting the nodes.
  bool AnyCount() const { return k() == 0 && granule() == 1; }
  bool restricted() const { return !allowed_.empty(); }
  bool Allowed(NodeId n) const { return allowed_.empty() || allowed_[n]; }

  // What the node could give the job now, ignoring power: k (or 0) with gpus_per_node, else its free GPUs.
  int NodeCapacity(NodeId n) const;
  // What the domain could give, ignoring power shared with other domains but capped by its rack's headroom.
  int DomainCapacity(DomainId d) const;
  // GPUs the rack (and every power domain above it) can still power for this job, after `scratch`.
  // `scratch` may be null (nothing taken yet).
  int PowerGpus(RackId r, const PowerScratch* scratch) const;
  // The most GPUs of this job any one rack (and every power domain above it) can still power: PowerGpus of the
  // best rack, from the ledger's headroom index in O(1). No domain can offer more than this.
  int MostPowerGpus() const;
  // Whether some rack can still power one share of the job (granule GPUs). When none can (a capped cluster at
  // its power limit), every domain's capacity is 0 and the searches can be skipped: they would visit every
  // domain to learn that, since a domain short of power does not count toward their candidate limits.
  bool SomeRackPowersAShare() const { return MostPowerGpus() >= granule(); }
  static constexpr int kUnlimited = 1 << 30;
  Milliwatts RackRoom(RackId r) const;  // watts left under the rack's own cap (less reserve)
  Milliwatts PowerDomainRoom(PowerDomainId p) const;
  // The GPUs of this job that rack r's own room, and power domain p's, can still power now (granule multiples;
  // kUnlimited when the job draws nothing).
  long long RackGpus(RackId r) const { return GpusFor(RackRoom(r)); }
  long long PowerDomainGpus(PowerDomainId p) const { return GpusFor(PowerDomainRoom(p)); }
  long long GpusFor(Milliwatts room) const;

  // Usable size of the largest domain of this type for this job, and the fewest domains the job needs.
  int EffectiveDomainSize() const { return effective_domain_size_; }
  int MinDomains() const;
  // The same, or 0 when no number of domains of this type can ever hold the job.
  int FewestDomainsEver() const;
  // ceil(gpus / EffectiveDomainSize()): the fewest by size alone (0 if the type cannot take the job).
  int DomainsBySize() const;
  // The fewest domains, and the most GPUs, the job could get of this type on the cluster as described, empty
  // and healthy, under the described caps less the reserve (`domains` is left empty). Worked out once per shape
  // (empty_cluster_memo.h), unless the request has a node list.
  FewestDomains FewestOnEmptyCluster() const;
  // Whether largest rooms first already give the job all its GPUs on the empty cluster (no node list): a
  // witness that FewestOnEmptyCluster().reachable covers the job, found without the exact search.
  bool GreedyReachesOnEmptyCluster() const { return !restricted() && GreedyDomainsOnEmptyCluster() != kUnlimited; }

 private:
  // Largest rooms first, sharing power as a plan would: an upper bound on the empty cluster's fewest domains.
  // Worked out once per shape; only asked without a node list.
  int GreedyDomainsOnEmptyCluster() const;
  int WorkOutGreedyDomainsOnEmptyCluster() const;
  FewestDomains WorkOutFewestOnEmptyCluster() const;
  EmptyClusterMemo::Shape EmptyClusterShape() const;
  // What domain `d` (every node of it, all of this type) could give the job on the empty cluster, ignoring power.
  int NominalOffer(const Topology::DomainRoom& d) const;

  const Ledger& ledger_;
  const Topology& topology_;
  const PlacementRequest& request_;
  Locality locality_;
  NodeTypeId type_;
  Milliwatts per_gpu_;
  const std::vector<char>& allowed_;
  double reserve_;
  int effective_domain_size_ = 0;
};

}  // namespace rackwise::internal
