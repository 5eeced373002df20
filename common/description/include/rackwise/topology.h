// The physical hierarchy of a cluster, compiled from a validated description into flat, indexed tables:
//   GPU < node < NVLink domain < rack < power domain < ... < hall feed,   rack < scalable unit.
// Immutable after Build(); everything that changes at run time (allocations, health, caps) lives in Ledger.
// Ids are dense indices into the tables, so the placer can use vectors instead of maps.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rackwise/gpu_mask.h"
#include "rackwise/placement_policy.h"
#include "rackwise/power_bounds.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise {

using NodeId = int32_t;
using NodeTypeId = int32_t;
using DomainId = int32_t;  // an NVLink domain
using RackId = int32_t;
using PowerDomainId = int32_t;
using ScalableUnitId = int32_t;
inline constexpr int32_t kNoId = -1;

// Power is kept in integer milliwatts so that adding and releasing allocations is exact.
using Milliwatts = int64_t;
// Saturates at +-1e18 mW (NaN gives 0) instead of casting an out-of-range double, which is undefined; every
// input is checked against power_bounds.h first, so saturation never decides anything.
inline Milliwatts WattsToMilliwatts(double watts) {
  const double mw = watts * 1000.0 + 0.5;
  if (std::isnan(mw)) return 0;
  return static_cast<Milliwatts>(std::clamp(mw, -1e18, 1e18));
}
inline double MilliwattsToWatts(Milliwatts mw) { return static_cast<double>(mw) / 1000.0; }
// What the placer may fill of a cap: the cap less the policy's reserve (the ledger enforces the whole cap).
inline Milliwatts UsableCap(Milliwatts cap, double reserve_fraction) {
  return static_cast<Milliwatts>(static_cast<double>(cap) * (1.0 - reserve_fraction));
}

enum class NvlinkScope {
  kNode,  // each node is its own NVLink domain (HGX/DGX)
  kRack,  // the nodes of this type in one rack form one domain (NVL72)
};

struct NodeType {
  std::string name;
  int gpus = 0;
  NvlinkScope nvlink = NvlinkScope::kNode;
  Milliwatts idle = 0;     // whole node idle
  Milliwatts per_gpu = 0;  // default draw of one allocated GPU: (node_watts - idle_watts) / gpus
  double gpu_watts = 0;    // nameplate, for reports
  // What a job may declare per GPU here: at least the policy's minimum and the GPU's idle share (see
  // IdleShareWattsPerGpu), so that no job is free; at most the policy's maximum (kMaxWattsPerGpu when unset).
  Milliwatts min_per_gpu = 0;
  Milliwatts max_per_gpu = 0;
};

struct Node {
  std::string name;
  NodeTypeId type = kNoId;
  RackId rack = kNoId;
  DomainId domain = kNoId;
  ScalableUnitId scalable_unit = kNoId;
  int gpus = 0;
};

struct NvlinkDomain {
  std::string name;  // the node's name (scope node) or "<rack>/<type>" (scope rack)
  NodeTypeId type = kNoId;
  RackId rack = kNoId;
  std::vector<NodeId> nodes;
  int gpus = 0;  // nominal size: all its nodes' GPUs, healthy or not
};

struct Rack {
  std::string name;
  Milliwatts cap = 0;   // as described; run-time overrides live in Ledger
  Milliwatts idle = 0;  // sum of its nodes' idle draw
  PowerDomainId power_domain = kNoId;
  ScalableUnitId scalable_unit = kNoId;
  std::vector<NodeId> nodes;
  std::vector<DomainId> domains;
  std::vector<PowerDomainId> power_chain;  // the rack's power domain, its parent, ... up to a root
};

struct PowerDomain {
  std::string name;
  Milliwatts cap = 0;
  Milliwatts idle = 0;  // idle draw of every rack below it
  PowerDomainId parent = kNoId;
  std::vector<RackId> racks;            // racks directly below
  std::vector<PowerDomainId> children;  // power domains directly below
};

struct ScalableUnit {
  std::string name;  // racks without one get an SU of their own, named after the rack
  std::vector<RackId> racks;
};

class Topology {
 public:
  // Compiles a description. Expects one that passed ValidateClusterDescription; still returns InvalidArgument
  // rather than misbehaving if it did not (unknown type, duplicate node, ...).
  static absl::StatusOr<Topology> Build(const v1::ClusterDescription& description);

  const std::string& cluster_name() const { return cluster_name_; }
  const PlacementPolicy& policy() const { return policy_; }

  const std::vector<NodeType>& node_types() const { return node_types_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<NvlinkDomain>& domains() const { return domains_; }
  const std::vector<Rack>& racks() const { return racks_; }
  const std::vector<PowerDomain>& power_domains() const { return power_domains_; }
  const std::vector<ScalableUnit>& scalable_units() const { return scalable_units_; }

  const NodeType& type_of(NodeId n) const { return node_types_[nodes_[n].type]; }
  int total_gpus() const { return total_gpus_; }
  // The largest NVLink domain of a node type, in nodes and in GPUs (0 if the type has no nodes).
  int max_domain_nodes(NodeTypeId type) const { return max_domain_nodes_[type]; }
  int max_domain_gpus(NodeTypeId type) const { return max_domain_gpus_[type]; }
  // The most GPUs of a node type in one rack of several of its domains (0 if no rack has two), and in one
  // scalable unit: whether a job could ever stay within one rack or one SU, so that the placer looks for such a
  // scope only when there can be one.
  int max_multi_domain_rack_gpus(NodeTypeId type) const { return max_multi_domain_rack_gpus_[type]; }
  int max_scalable_unit_gpus(NodeTypeId type) const { return max_scalable_unit_gpus_[type]; }

  // Every NVLink domain of a type with the watts its rack could ever give it (the rack's cap and every power
  // domain's above it, less the policy's reserve, less idle draw), largest first. Lets the placer say how few
  // domains a job can use once caps are counted, not only GPUs.
  struct DomainRoom {
    DomainId domain = kNoId;
    Milliwatts room = 0;
    int gpus = 0;
    int nodes = 0;
  };
  const std::vector<DomainRoom>& domain_rooms(NodeTypeId type) const { return domain_rooms_[type]; }

  // Power domains, every child before its parent: the order in which limits over a subtree add up.
  const std::vector<PowerDomainId>& power_domains_deepest_first() const { return power_domains_deepest_first_; }
  int max_gpus_per_node() const { return max_gpus_per_node_; }

  std::optional<NodeId> FindNode(std::string_view name) const;
  std::optional<RackId> FindRack(std::string_view name) const;
  std::optional<PowerDomainId> FindPowerDomain(std::string_view name) const;
  std::optional<NodeTypeId> FindNodeType(std::string_view name) const;

 private:
  // Build's steps, in order; each checks what it reads and says what is wrong.
  using TypeIndex = absl::flat_hash_map<std::string, NodeTypeId>;
  absl::Status AddNodeTypes(const v1::ClusterDescription& d, TypeIndex* type_index);
  absl::Status AddPowerDomains(const v1::ClusterDescription& d);
  absl::Status AddRack(const v1::Rack& r, const TypeIndex& type_index,
                       absl::flat_hash_map<std::string, ScalableUnitId>* su_index);
  // The nodes of one hostlist of a rack, with their NVLink domains (one per node, or one per rack and type).
  absl::Status AddRackNodes(const std::string& rack_name, RackId rack_id, NodeTypeId type_id,
                            const std::string& hostlist, Rack* rack,
                            absl::flat_hash_map<NodeTypeId, DomainId>* rack_domain_of_type);
  // What decisions read often: largest domain per type, each domain's power room, power domains deepest first.
  void BuildScopeSizes();  // max_multi_domain_rack_gpus_, max_scalable_unit_gpus_
  void BuildDerivedTables();

  std::string cluster_name_;
  PlacementPolicy policy_;
  std::vector<NodeType> node_types_;
  std::vector<Node> nodes_;
  std::vector<NvlinkDomain> domains_;
  std::vector<Rack> racks_;
  std::vector<PowerDomain> power_domains_;
  std::vector<ScalableUnit> scalable_units_;
  absl::flat_hash_map<std::string, NodeId> node_index_;
  absl::flat_hash_map<std::string, RackId> rack_index_;
  absl::flat_hash_map<std::string, PowerDomainId> power_domain_index_;
  std::vector<int> max_domain_nodes_, max_domain_gpus_;
  std::vector<int> max_multi_domain_rack_gpus_, max_scalable_unit_gpus_;
  std::vector<std::vector<DomainRoom>> domain_rooms_;
  std::vector<PowerDomainId> power_domains_deepest_first_;
  int total_gpus_ = 0;
  int max_gpus_per_node_ = 0;
};

}  // namespace rackwise
