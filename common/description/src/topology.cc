// Compiles a ClusterDescription into the dense tables of Topology. See topology.h.
#include "rackwise/topology.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "rackwise/hostlist.h"

namespace rackwise {
namespace {

Locality LocalityFromProto(v1::Locality l) {
  switch (l) {
    case v1::LOCALITY_REQUIRED: return Locality::kRequired;
    case v1::LOCALITY_NONE: return Locality::kNone;
    default: return Locality::kPreferred;
  }
}

PlacementPolicy ResolvePolicy(const v1::Policy& p) {
  PlacementPolicy out;
  out.default_locality = LocalityFromProto(p.default_locality());
  out.power_reserve_fraction = p.power_reserve_pct() / 100.0;
  // proto3 doubles have no presence: 0 (or absent) keeps the documented default.
  auto pick = [](double v, double def) { return v > 0 ? v : def; };
  const v1::Weights& w = p.weights();
  out.weights.domain_packing = pick(w.domain_packing(), out.weights.domain_packing);
  out.weights.rack_packing = pick(w.rack_packing(), out.weights.rack_packing);
  out.weights.rail_alignment = pick(w.rail_alignment(), out.weights.rail_alignment);
  out.weights.power_headroom = pick(w.power_headroom(), out.weights.power_headroom);
  out.min_watts_per_gpu = p.min_watts_per_gpu();
  out.max_watts_per_gpu = p.max_watts_per_gpu() > 0 ? p.max_watts_per_gpu() : kMaxWattsPerGpu;
  // Both have presence: an explicit 0 says "never wait", absence the default.
  if (p.has_preferred_wait_s()) out.preferred_wait_seconds = std::max(0.0, p.preferred_wait_s());
  if (p.has_spread_cost_fraction())
    out.spread_cost_fraction = std::clamp(p.spread_cost_fraction(), 0.0, kMaxSpreadCostFraction);
  const v1::Steering& st = p.steering();
  out.steering_hysteresis_fraction = std::clamp(pick(st.hysteresis_pct(), 5), 0.0, 50.0) / 100.0;
  out.steering_floor_fraction = std::clamp(pick(st.floor_pct(), 30), 1.0, 100.0) / 100.0;
  out.steering_priority_weighted = st.priority_weighted();
  out.oversubscribe_fraction = std::clamp(p.oversubscribe_pct(), 0.0, 50.0) / 100.0;
  return out;
}

Milliwatts KilowattsToMilliwatts(double kw) { return WattsToMilliwatts(kw * 1000.0); }

// The bounds of power_bounds.h, checked again here because Build is where numbers become milliwatts: a
// description that skipped validation must not overflow the ledger either.
absl::Status CheckNodeTypeWatts(const v1::NodeType& nt) {
  if (!std::isfinite(nt.node_watts()) || !std::isfinite(nt.idle_watts()) || nt.idle_watts() < 0 ||
      nt.node_watts() < nt.idle_watts())
    return absl::InvalidArgumentError(absl::StrCat("node type ", nt.name(), ": need 0 <= idle_watts <= node_watts"));
  if (nt.node_watts() > kMaxNodeWatts || !(nt.gpu_watts() >= 0 && nt.gpu_watts() <= kMaxWattsPerGpu))
    return absl::InvalidArgumentError(absl::StrCat("node type ", nt.name(), ": node_watts at most ", kMaxNodeWatts,
                                                   " W and gpu_watts at most ", kMaxWattsPerGpu, " W"));
  if (nt.node_watts() - nt.idle_watts() < kMinWattsPerGpu * nt.gpus())
    return absl::InvalidArgumentError(absl::StrCat("node type ", nt.name(), ": node_watts must exceed idle_watts by ",
                                                   kMinWattsPerGpu, " W per GPU"));
  return absl::OkStatus();
}

absl::Status CheckCap(const std::string& name, double kw) {
  if (absl::Status s = CheckCapKw(kw); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", s.message()));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Topology> Topology::Build(const v1::ClusterDescription& d) {
  Topology t;
  t.cluster_name_ = d.cluster();
  for (double w : {d.policy().min_watts_per_gpu(), d.policy().max_watts_per_gpu()}) {
    if (!(w >= 0 && w <= kMaxWattsPerGpu))  // NaN too: a floor must never vanish
      return absl::InvalidArgumentError(
          absl::StrCat("policy: min_watts_per_gpu and max_watts_per_gpu must be 0..", kMaxWattsPerGpu));
  }
  t.policy_ = ResolvePolicy(d.policy());
  TypeIndex type_index;
  if (absl::Status s = t.AddNodeTypes(d, &type_index); !s.ok()) return s;
  if (absl::Status s = t.AddPowerDomains(d); !s.ok()) return s;
  absl::flat_hash_map<std::string, ScalableUnitId> su_index;
  for (const v1::Rack& r : d.racks()) {
    if (absl::Status s = t.AddRack(r, type_index, &su_index); !s.ok()) return s;
  }
  t.BuildDerivedTables();
  return t;
}

absl::Status Topology::AddNodeTypes(const v1::ClusterDescription& d, TypeIndex* type_index) {
  for (const v1::NodeType& nt : d.node_types()) {
    if (nt.gpus() < 1 || nt.gpus() > kMaxGpusPerNode)
      return absl::InvalidArgumentError(absl::StrCat("node type ", nt.name(), ": gpus must be 1..64"));
    if (nt.nvlink() == v1::NVLINK_SCOPE_UNSPECIFIED)
      return absl::InvalidArgumentError(absl::StrCat("node type ", nt.name(), ": nvlink must be node or rack"));
    if (absl::Status s = CheckNodeTypeWatts(nt); !s.ok()) return s;
    if (!type_index->emplace(nt.name(), static_cast<NodeTypeId>(node_types_.size())).second)
      return absl::InvalidArgumentError(absl::StrCat("node type ", nt.name(), " defined twice"));
    NodeType out;
    out.name = nt.name();
    out.gpus = static_cast<int>(nt.gpus());
    out.nvlink = nt.nvlink() == v1::NVLINK_SCOPE_RACK ? NvlinkScope::kRack : NvlinkScope::kNode;
    out.idle = WattsToMilliwatts(nt.idle_watts());
    out.per_gpu = WattsToMilliwatts((nt.node_watts() - nt.idle_watts()) / nt.gpus());
    out.gpu_watts = nt.gpu_watts();
    // The policy may raise the floor under declared watts, never lower it below the GPU's idle share.
    out.min_per_gpu = WattsToMilliwatts(std::max(
        policy_.min_watts_per_gpu, IdleShareWattsPerGpu(out.gpus, nt.idle_watts(), nt.node_watts(), nt.gpu_watts())));
    out.max_per_gpu = WattsToMilliwatts(std::min(policy_.max_watts_per_gpu, kMaxWattsPerGpu));
    node_types_.push_back(std::move(out));
    max_gpus_per_node_ = std::max(max_gpus_per_node_, static_cast<int>(nt.gpus()));
  }
  return absl::OkStatus();
}

absl::Status Topology::AddPowerDomains(const v1::ClusterDescription& d) {
  for (const v1::PowerDomain& pd : d.power_domains()) {
    if (!power_domain_index_.emplace(pd.name(), static_cast<PowerDomainId>(power_domains_.size())).second)
      return absl::InvalidArgumentError(absl::StrCat("power domain ", pd.name(), " defined twice"));
    PowerDomain out;
    out.name = pd.name();
    if (absl::Status s = CheckCap(absl::StrCat("power domain ", pd.name()), pd.power_cap_kw()); !s.ok()) return s;
    out.cap = KilowattsToMilliwatts(pd.power_cap_kw());
    power_domains_.push_back(std::move(out));
  }
  for (int i = 0; i < d.power_domains_size(); ++i) {
    const std::string& parent = d.power_domains(i).parent();
    if (parent.empty()) continue;
    auto it = power_domain_index_.find(parent);
    if (it == power_domain_index_.end())
      return absl::InvalidArgumentError(
          absl::StrCat("power domain ", d.power_domains(i).name(), ": unknown parent ", parent));
    power_domains_[i].parent = it->second;
    power_domains_[it->second].children.push_back(i);
  }
  // Cycle check: a chain longer than the number of domains must loop.
  for (PowerDomainId i = 0; i < static_cast<PowerDomainId>(power_domains_.size()); ++i) {
    int steps = 0;
    for (PowerDomainId p = i; p != kNoId; p = power_domains_[p].parent) {
      if (++steps > static_cast<int>(power_domains_.size()))
        return absl::InvalidArgumentError(absl::StrCat("power domain ", power_domains_[i].name, " is in a cycle"));
    }
  }
  return absl::OkStatus();
}

absl::Status Topology::AddRack(const v1::Rack& r, const TypeIndex& type_index,
                               absl::flat_hash_map<std::string, ScalableUnitId>* su_index) {
  const RackId rack_id = static_cast<RackId>(racks_.size());
  if (!rack_index_.emplace(r.name(), rack_id).second)
    return absl::InvalidArgumentError(absl::StrCat("rack ", r.name(), " defined twice"));
  Rack rack;
  rack.name = r.name();
  if (absl::Status s = CheckCap(absl::StrCat("rack ", r.name()), r.power_cap_kw()); !s.ok()) return s;
  rack.cap = KilowattsToMilliwatts(r.power_cap_kw());
  if (!r.power_domain().empty()) {
    auto it = power_domain_index_.find(r.power_domain());
    if (it == power_domain_index_.end())
      return absl::InvalidArgumentError(absl::StrCat("rack ", r.name(), ": unknown power domain ", r.power_domain()));
    rack.power_domain = it->second;
    power_domains_[it->second].racks.push_back(rack_id);
    for (PowerDomainId p = it->second; p != kNoId; p = power_domains_[p].parent) rack.power_chain.push_back(p);
  }
  const std::string su_name = r.scalable_unit().empty() ? r.name() : r.scalable_unit();
  auto [su_it, su_new] = su_index->emplace(su_name, static_cast<ScalableUnitId>(scalable_units_.size()));
  if (su_new) scalable_units_.push_back(ScalableUnit{su_name, {}});
  rack.scalable_unit = su_it->second;
  scalable_units_[su_it->second].racks.push_back(rack_id);

  std::vector<std::pair<std::string, std::string>> groups;  // (type, hostlist)
  if (!r.nodes().empty() || !r.type().empty()) groups.emplace_back(r.type(), r.nodes());
  for (const v1::NodeGroup& g : r.node_groups()) groups.emplace_back(g.type(), g.nodes());
  absl::flat_hash_map<NodeTypeId, DomainId> rack_domain_of_type;
  for (const auto& [type_name, hostlist] : groups) {
    auto type_it = type_index.find(type_name);
    if (type_it == type_index.end())
      return absl::InvalidArgumentError(absl::StrCat("rack ", r.name(), ": unknown node type '", type_name, "'"));
    if (absl::Status s = AddRackNodes(r.name(), rack_id, type_it->second, hostlist, &rack, &rack_domain_of_type);
        !s.ok())
      return s;
  }
  for (PowerDomainId p : rack.power_chain) power_domains_[p].idle += rack.idle;
  racks_.push_back(std::move(rack));
  return absl::OkStatus();
}

absl::Status Topology::AddRackNodes(const std::string& rack_name, RackId rack_id, NodeTypeId type_id,
                                    const std::string& hostlist, Rack* rack,
                                    absl::flat_hash_map<NodeTypeId, DomainId>* rack_domain_of_type) {
  const NodeType& type = node_types_[type_id];
  absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(hostlist);
  if (!names.ok()) return absl::InvalidArgumentError(absl::StrCat("rack ", rack_name, ": ", names.status().message()));
  if (nodes_.size() + names->size() > kMaxClusterNodes)
    return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxClusterNodes, " nodes in the cluster"));
  for (std::string& name : *names) {
    const NodeId node_id = static_cast<NodeId>(nodes_.size());
    if (!node_index_.emplace(name, node_id).second)
      return absl::InvalidArgumentError(absl::StrCat("node ", name, " is listed twice"));
    DomainId domain_id;
    if (type.nvlink == NvlinkScope::kRack) {  // one domain per rack and type
      auto [dit, fresh] = rack_domain_of_type->emplace(type_id, static_cast<DomainId>(domains_.size()));
      if (fresh) {
        domains_.push_back(NvlinkDomain{absl::StrCat(rack_name, "/", type.name), type_id, rack_id, {}, 0});
        rack->domains.push_back(dit->second);
      }
      domain_id = dit->second;
    } else {
      domain_id = static_cast<DomainId>(domains_.size());
      domains_.push_back(NvlinkDomain{name, type_id, rack_id, {}, 0});
      rack->domains.push_back(domain_id);
    }
    domains_[domain_id].nodes.push_back(node_id);
    domains_[domain_id].gpus += type.gpus;
    rack->nodes.push_back(node_id);
    rack->idle += type.idle;
    total_gpus_ += type.gpus;
    nodes_.push_back(Node{std::move(name), type_id, rack_id, domain_id, rack->scalable_unit, type.gpus});
  }
  return absl::OkStatus();
}

void Topology::BuildScopeSizes() {
  max_multi_domain_rack_gpus_.assign(node_types_.size(), 0);
  max_scalable_unit_gpus_.assign(node_types_.size(), 0);
  std::vector<int> gpus(node_types_.size()), domains(node_types_.size());
  for (const ScalableUnit& su : scalable_units_) {
    std::vector<int> su_gpus(node_types_.size(), 0);
    for (RackId r : su.racks) {
      std::fill(gpus.begin(), gpus.end(), 0);
      std::fill(domains.begin(), domains.end(), 0);
      for (DomainId d : racks_[r].domains) {
        gpus[domains_[d].type] += domains_[d].gpus;
        domains[domains_[d].type]++;
      }
      for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(node_types_.size()); ++type) {
        su_gpus[type] += gpus[type];
        if (domains[type] > 1)
          max_multi_domain_rack_gpus_[type] = std::max(max_multi_domain_rack_gpus_[type], gpus[type]);
      }
    }
    for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(node_types_.size()); ++type)
      max_scalable_unit_gpus_[type] = std::max(max_scalable_unit_gpus_[type], su_gpus[type]);
  }
}

void Topology::BuildDerivedTables() {
  max_domain_nodes_.assign(node_types_.size(), 0);
  max_domain_gpus_.assign(node_types_.size(), 0);
  for (const NvlinkDomain& dom : domains_) {
    max_domain_nodes_[dom.type] = std::max(max_domain_nodes_[dom.type], static_cast<int>(dom.nodes.size()));
    max_domain_gpus_[dom.type] = std::max(max_domain_gpus_[dom.type], dom.gpus);
  }
  BuildScopeSizes();
  const double reserve = policy_.power_reserve_fraction;
  auto room = [reserve](Milliwatts cap, Milliwatts idle) { return UsableCap(cap, reserve) - idle; };
  domain_rooms_.resize(node_types_.size());
  for (DomainId di = 0; di < static_cast<DomainId>(domains_.size()); ++di) {
    const NvlinkDomain& dom = domains_[di];
    const Rack& rack = racks_[dom.rack];
    Milliwatts r = room(rack.cap, rack.idle);
    for (PowerDomainId p : rack.power_chain) r = std::min(r, room(power_domains_[p].cap, power_domains_[p].idle));
    domain_rooms_[dom.type].push_back({di, std::max<Milliwatts>(0, r), dom.gpus, static_cast<int>(dom.nodes.size())});
  }
  std::vector<int> depth(power_domains_.size(), 0);
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(depth.size()); ++p) {
    power_domains_deepest_first_.push_back(p);
    for (PowerDomainId q = power_domains_[p].parent; q != kNoId; q = power_domains_[q].parent) ++depth[p];
  }
  std::stable_sort(power_domains_deepest_first_.begin(), power_domains_deepest_first_.end(),
                   [&](PowerDomainId a, PowerDomainId b) { return depth[a] > depth[b]; });
  for (auto& rooms : domain_rooms_)
    std::stable_sort(rooms.begin(), rooms.end(), [](const DomainRoom& a, const DomainRoom& b) {
      return a.room != b.room ? a.room > b.room : a.gpus > b.gpus;
    });
}

std::optional<NodeId> Topology::FindNode(std::string_view name) const {
  auto it = node_index_.find(absl::string_view(name.data(), name.size()));
  if (it == node_index_.end()) return std::nullopt;
  return it->second;
}
std::optional<RackId> Topology::FindRack(std::string_view name) const {
  auto it = rack_index_.find(absl::string_view(name.data(), name.size()));
  if (it == rack_index_.end()) return std::nullopt;
  return it->second;
}
std::optional<PowerDomainId> Topology::FindPowerDomain(std::string_view name) const {
  auto it = power_domain_index_.find(absl::string_view(name.data(), name.size()));
  if (it == power_domain_index_.end()) return std::nullopt;
  return it->second;
}
std::optional<NodeTypeId> Topology::FindNodeType(std::string_view name) const {
  for (NodeTypeId i = 0; i < static_cast<NodeTypeId>(node_types_.size()); ++i)
    if (node_types_[i].name == name) return i;
  return std::nullopt;
}

}  // namespace rackwise
