// Internal to the placer: one request evaluated against one node type, with the power it has tentatively
// taken so far. Answers "what could this node / domain / rack give this job" without mutating the ledger.
#pragma once

#include <vector>

#include "rackwise/ledger.h"
#include "rackwise/placement_request.h"

namespace rackwise::internal {

// Watts a plan in progress has taken, so that domains sharing a rack or a row do not spend the same headroom.
// Dense vectors with a touched list: O(1) per operation and cheap to reset.
class PowerScratch {
 public:
  PowerScratch(size_t racks, size_t power_domains) : rack_(racks, 0), pd_(power_domains, 0) {}
  Milliwatts rack(RackId r) const { return rack_[r]; }
  Milliwatts power_domain(PowerDomainId p) const { return pd_[p]; }
  void Add(const Rack& rack_info, RackId r, Milliwatts mw);
  void Clear();

 private:
  std::vector<Milliwatts> rack_, pd_;
  std::vector<RackId> touched_racks_;
  std::vector<PowerDomainId> touched_pds_;
};

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
  // A share of the job on one node is a multiple of this (k, or 1).
  int granule() const { return k() > 0 ? k() : 1; }
  int RoundDown(int g) const { return g / granule() * granule(); }
  bool restricted() const { return !allowed_.empty(); }
  bool Allowed(NodeId n) const { return allowed_.empty() || allowed_[n]; }

  // What the node could give the job now, ignoring power: k (or 0) with gpus_per_node, else its free GPUs.
  int NodeCapacity(NodeId n) const;
  // What the domain could give, ignoring power shared with other domains but capped by its rack's headroom.
  int DomainCapacity(DomainId d) const;
  // GPUs the rack (and every power domain above it) can still power for this job, after `scratch`.
  // `scratch` may be null (nothing taken yet).
  int PowerGpus(RackId r, const PowerScratch* scratch) const;
  static constexpr int kUnlimited = 1 << 30;
  Milliwatts RackRoom(RackId r) const;  // watts left under the rack's own cap (less reserve)
  Milliwatts PowerDomainRoom(PowerDomainId p) const;

  // Usable size of the largest domain of this type for this job, and the fewest domains the job needs.
  int EffectiveDomainSize() const { return effective_domain_size_; }
  int MinDomains() const;

 private:
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
