// The ledger: allocations, health, caps and the placement index. See ledger.h for the contract.
#include "rackwise/ledger.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "empty_cluster_memo.h"

namespace rackwise {
namespace {

std::string Kw(Milliwatts mw) { return absl::StrFormat("%.1f kW", static_cast<double>(mw) / 1e6); }

// One counter for the whole process, so that a ledger built anew (a reconfigure) never repeats a generation
// another ledger had.
std::atomic<uint64_t> next_generation{1};

}  // namespace

Ledger::Ledger(const Topology& topology)
    : topology_(&topology), empty_cluster_memo_(std::make_shared<internal::EmptyClusterMemo>()) {
  Changed();
  const size_t n = topology.nodes().size();
  health_.assign(n, NodeHealth::kUp);
  allocated_.assign(n, 0);
  failed_.assign(n, 0);
  node_free_.resize(n);
  for (size_t i = 0; i < n; ++i) node_free_[i] = topology.nodes()[i].gpus;
  for (const Rack& r : topology.racks()) {
    rack_cap_.push_back(r.cap);
    rack_draw_.push_back(r.idle);
  }
  for (const PowerDomain& pd : topology.power_domains()) {
    pd_cap_.push_back(pd.cap);
    pd_draw_.push_back(pd.idle);
  }
  rack_adjust_.assign(rack_cap_.size(), 0);
  rack_measured_.assign(rack_cap_.size(), std::nullopt);
  added_since_reading_.assign(rack_cap_.size(), 0);
  added_before_reading_.assign(rack_cap_.size(), 0);
  pd_adjust_.assign(pd_cap_.size(), 0);
  buckets_.resize(topology.node_types().size());
  for (const NvlinkDomain& d : topology.domains()) {
    auto& b = buckets_[d.type];
    if (static_cast<int>(b.size()) <= d.gpus) b.resize(d.gpus + 1);
  }
  const size_t nd = topology.domains().size();
  domain_free_.assign(nd, 0);
  domain_hist_.resize(nd);
  bucket_pos_.assign(nd, 0);
  for (DomainId d = 0; d < static_cast<DomainId>(nd); ++d) {
    const NvlinkDomain& dom = topology.domains()[d];
    domain_hist_[d].assign(topology.node_types()[dom.type].gpus + 1, 0);
    for (NodeId node : dom.nodes) {
      domain_free_[d] += node_free_[node];
      domain_hist_[d][node_free_[node]]++;
    }
    auto& bucket = buckets_[dom.type][domain_free_[d]];
    bucket_pos_[d] = static_cast<int>(bucket.size());
    bucket.push_back(d);
  }
  rack_tallies_.resize(rack_cap_.size());
  for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(topology.node_types().size()); ++type)
    type_tallies_.push_back({type, 0, 0, 0, std::vector<int>(topology.node_types()[type].gpus + 1, 0), 0});
  for (RackId r = 0; r < static_cast<RackId>(rack_tallies_.size()); ++r) {
    for (NodeId node : topology.racks()[r].nodes) {
      const NodeTypeId type = topology.nodes()[node].type;
      auto& tallies = rack_tallies_[r];
      auto it = std::find_if(tallies.begin(), tallies.end(), [type](const RackTypeTally& x) { return x.type == type; });
      if (it == tallies.end()) {
        tallies.push_back({type, 0, 0, 0, std::vector<int>(topology.node_types()[type].gpus + 1, 0), 0});
        it = tallies.end() - 1;
      }
      it->nodes++;
      type_tallies_[type].nodes++;
      Tally(node, +1);
    }
  }
  for (RackId r = 0; r < static_cast<RackId>(topology.racks().size()); ++r)
    if (topology.racks()[r].power_domain == kNoId) root_racks_.push_back(r);
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(topology.power_domains().size()); ++p)
    if (topology.power_domains()[p].parent == kNoId) root_pds_.push_back(p);
  LayOutPowerGroups();
  RebuildHeadroom();
}

void Ledger::Tally(NodeId node, int sign) {
  const Node& n = topology_->nodes()[node];
  auto add = [&](RackTypeTally& tally) {
    switch (health_[node]) {
      case NodeHealth::kDown: tally.down += sign; break;
      case NodeHealth::kDrained: tally.drained += sign; break;
      case NodeHealth::kUp:
        tally.up_by_free[node_free_[node]] += sign;
        tally.up_free_gpus += sign * node_free_[node];
        break;
    }
  };
  add(type_tallies_[n.type]);
  for (RackTypeTally& tally : rack_tallies_[n.rack]) {
    if (tally.type != n.type) continue;
    add(tally);
    return;
  }
}

// A declared draw below the type's floor (only recovery lets one in) is charged at the floor: no job is free.
Milliwatts Ledger::PerGpu(const Allocation& allocation, NodeId node) const {
  const NodeType& type = topology_->type_of(node);
  return allocation.per_gpu > 0 ? std::max(allocation.per_gpu, type.min_per_gpu) : type.per_gpu;
}

namespace {

// "allocation J: rack R would need A, B left", naming the usable cap when a reserve applies.
absl::Status CapRefusal(const std::string& id, const std::string& what, Milliwatts add, Milliwatts room, Milliwatts cap,
                        double reserve_fraction, bool measured) {
  std::string text = absl::StrCat("allocation ", id, ": ", what, " would need ", Kw(add), ", ",
                                  Kw(std::max<Milliwatts>(0, room)), " left");
  if (reserve_fraction > 0) {
    absl::StrAppend(&text, " under its usable cap ", Kw(UsableCap(cap, reserve_fraction)), " (cap ", Kw(cap),
                    " less the ", absl::StrFormat("%g", reserve_fraction * 100), "% reserve)");
  }
  if (measured) absl::StrAppend(&text, " (measured)");
  return absl::FailedPreconditionError(text);
}

}  // namespace

absl::Status Ledger::Commit(const Allocation& a, CommitMode mode) {
  if (const Allocation* existing = Find(a.id); existing != nullptr && *existing == a) return absl::OkStatus();
  if (absl::Status s = Check(a, mode); !s.ok()) return s;
  Apply(a, +1);
  allocations_.emplace(a.id, a);
  return absl::OkStatus();
}

absl::Status Ledger::Check(const Allocation& a, CommitMode mode, double reserve_fraction) const {
  if (a.id.empty()) return absl::InvalidArgumentError("allocation has no id");
  if (a.nodes.empty()) return absl::InvalidArgumentError(absl::StrCat("allocation ", a.id, " holds no node"));
  // Bounded here, where run-time values enter the milliwatt sums (see power_bounds.h for why they cannot overflow).
  if (a.per_gpu < 0 || a.per_gpu > WattsToMilliwatts(kMaxWattsPerGpu))
    return absl::InvalidArgumentError(absl::StrCat("allocation ", a.id, ": watts per GPU ",
                                                   MilliwattsToWatts(a.per_gpu), " is outside 0..", kMaxWattsPerGpu));
  if (const Allocation* existing = Find(a.id)) {
    if (*existing == a) return absl::OkStatus();
    return absl::AlreadyExistsError(absl::StrCat("allocation ", a.id, " is already held with other GPUs"));
  }
  const auto& nodes = topology_->nodes();
  // Validate every node before touching anything, so that an error changes nothing.
  std::map<RackId, Milliwatts> rack_add;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const NodeGpus& ng = a.nodes[i];
    if (ng.node < 0 || ng.node >= static_cast<NodeId>(nodes.size()))
      return absl::InvalidArgumentError(absl::StrCat("allocation ", a.id, ": unknown node id ", ng.node));
    const Node& node = nodes[ng.node];
    if (ng.gpus == 0) return absl::InvalidArgumentError(absl::StrCat("allocation ", a.id, ": no GPU on ", node.name));
    if (ng.gpus & ~FullGpuMask(node.gpus))
      return absl::InvalidArgumentError(
          absl::StrCat("allocation ", a.id, ": GPU index beyond ", node.gpus, " on ", node.name));
    for (size_t j = 0; j < i; ++j)
      if (a.nodes[j].node == ng.node)
        return absl::InvalidArgumentError(absl::StrCat("allocation ", a.id, ": node ", node.name, " listed twice"));
    if (allocated_[ng.node] & ng.gpus)
      return absl::FailedPreconditionError(absl::StrCat("allocation ", a.id, ": GPU ",
                                                        std::countr_zero(allocated_[ng.node] & ng.gpus), " on ",
                                                        node.name, " is held by another allocation"));
    if (mode == CommitMode::kEnforce) {
      if (health_[ng.node] != NodeHealth::kUp)
        return absl::FailedPreconditionError(absl::StrCat("allocation ", a.id, ": node ", node.name, " is ",
                                                          health_[ng.node] == NodeHealth::kDown ? "down" : "drained"));
      if (failed_[ng.node] & ng.gpus)
        return absl::FailedPreconditionError(absl::StrCat("allocation ", a.id, ": GPU ",
                                                          std::countr_zero(failed_[ng.node] & ng.gpus), " on ",
                                                          node.name, " has failed"));
      const NodeType& type = topology_->type_of(ng.node);
      if (a.per_gpu > 0 && (a.per_gpu < type.min_per_gpu || a.per_gpu > type.max_per_gpu))
        return absl::InvalidArgumentError(absl::StrCat(
            "allocation ", a.id, ": ", MilliwattsToWatts(a.per_gpu), " W per GPU is outside what ", type.name,
            " takes (", MilliwattsToWatts(type.min_per_gpu), "..", MilliwattsToWatts(type.max_per_gpu), " W)"));
    }
    rack_add[node.rack] += GpuCount(ng.gpus) * PerGpu(a, ng.node);
  }
  if (mode == CommitMode::kEnforce) {
    // Ordered by id, so that the first rack or power domain named in a refusal does not depend on hashing.
    std::map<PowerDomainId, Milliwatts> pd_add;
    for (const auto& [rack, add] : rack_add) {
      if (RackRoom(rack, reserve_fraction) < add)
        return CapRefusal(a.id, "rack " + topology_->racks()[rack].name, add, RackRoom(rack, reserve_fraction),
                          rack_cap_[rack], reserve_fraction, rack_measured_[rack].has_value());
      for (PowerDomainId p : topology_->racks()[rack].power_chain) pd_add[p] += add;
    }
    for (const auto& [pd, add] : pd_add) {
      if (PowerDomainRoom(pd, reserve_fraction) < add)
        return CapRefusal(a.id, "power domain " + topology_->power_domains()[pd].name, add,
                          PowerDomainRoom(pd, reserve_fraction), pd_cap_[pd], reserve_fraction, false);
    }
  }
  return absl::OkStatus();
}

absl::Status Ledger::Replace(const Allocation& a, CommitMode mode) {
  const Allocation* existing = Find(a.id);
  if (existing == nullptr) return Commit(a, mode);
  if (*existing == a) return absl::OkStatus();
  Allocation old = *existing;
  Release(a.id);
  absl::Status s = Commit(a, mode);
  if (!s.ok()) {
    // Put the old one back exactly as it was; it was valid a moment ago, so recovery mode cannot fail on caps.
    absl::Status back = Commit(old, CommitMode::kRecover);
    (void)back;
  }
  return s;
}

bool Ledger::Release(std::string_view id) {
  auto it = allocations_.find(absl::string_view(id.data(), id.size()));
  if (it == allocations_.end()) return false;
  Apply(it->second, -1);
  allocations_.erase(it);
  return true;
}

void Ledger::Changed() { generation_ = next_generation.fetch_add(1, std::memory_order_relaxed); }

void Ledger::Apply(const Allocation& a, int sign) {
  Changed();
  RackId changed = kNoId;  // the rack whose draw moved last, brought into the headroom index once per run of nodes
  for (const NodeGpus& ng : a.nodes) {
    const Node& node = topology_->nodes()[ng.node];
    if (changed != kNoId && changed != node.rack) RackPowerChanged(changed);
    changed = node.rack;
    const Milliwatts watts = GpuCount(ng.gpus) * PerGpu(a, ng.node) * sign;
    rack_draw_[node.rack] += watts;
    for (PowerDomainId p : topology_->racks()[node.rack].power_chain) pd_draw_[p] += watts;
    if (sign > 0) added_since_reading_[node.rack] += watts;
    if (rack_measured_[node.rack]) Readjust(node.rack);
    Tally(ng.node, -1);
    if (sign > 0) {
      allocated_[ng.node] |= ng.gpus;
    } else {
      allocated_[ng.node] &= ~ng.gpus;
    }
    Reindex(ng.node);
    Tally(ng.node, +1);
  }
  if (changed != kNoId) RackPowerChanged(changed);
}

const Allocation* Ledger::Find(std::string_view id) const {
  auto it = allocations_.find(absl::string_view(id.data(), id.size()));
  return it == allocations_.end() ? nullptr : &it->second;
}

std::vector<const Allocation*> Ledger::Allocations() const {
  std::vector<const Allocation*> out;
  out.reserve(allocations_.size());
  for (const auto& [id, a] : allocations_) out.push_back(&a);
  std::sort(out.begin(), out.end(), [](const Allocation* x, const Allocation* y) { return x->id < y->id; });
  return out;
}

void Ledger::SetNodeHealth(NodeId node, NodeHealth health) {
  Changed();
  Tally(node, -1);
  health_[node] = health;
  Reindex(node);
  Tally(node, +1);
  RackGroupChanged(topology_->nodes()[node].rack);
}

void Ledger::SetGpuFailed(NodeId node, int gpu, bool failed) {
  if (gpu < 0 || gpu >= topology_->nodes()[node].gpus) return;
  Changed();
  Tally(node, -1);
  if (failed) {
    failed_[node] |= GpuMask{1} << gpu;
  } else {
    failed_[node] &= ~(GpuMask{1} << gpu);
  }
  Reindex(node);
  Tally(node, +1);
  RackGroupChanged(topology_->nodes()[node].rack);
}

// Clamped to the bounds of power_bounds.h: faces check caps with CheckCapKw first, and the ledger's sums stay
// exact whatever a caller passes.
Milliwatts Ledger::BoundedCap(Milliwatts cap) {
  return std::clamp<Milliwatts>(cap, 0, WattsToMilliwatts(kMaxCapKw * 1000.0));
}
void Ledger::SetRackCap(RackId rack, Milliwatts cap) {
  Changed();
  rack_cap_[rack] = BoundedCap(cap);
  RackPowerChanged(rack);
}
void Ledger::SetPowerDomainCap(PowerDomainId domain, Milliwatts cap) {
  Changed();
  pd_cap_[domain] = BoundedCap(cap);
  PowerDomainPowerChanged(domain);
}

Milliwatts Ledger::RackHeadroom(RackId rack, double reserve_fraction) const {
  Milliwatts h = RackRoom(rack, reserve_fraction);
  for (PowerDomainId p : topology_->racks()[rack].power_chain) h = std::min(h, PowerDomainRoom(p, reserve_fraction));
  return std::max<Milliwatts>(0, h);
}

int Ledger::domain_nodes_with_free(DomainId domain, int k) const {
  const auto& hist = domain_hist_[domain];
  int n = 0;
  for (int f = std::max(k, 0); f < static_cast<int>(hist.size()); ++f) n += hist[f];
  return n;
}

const std::vector<DomainId>& Ledger::DomainsWithFree(NodeTypeId type, int free) const {
  static const std::vector<DomainId> kEmpty;
  const auto& b = buckets_[type];
  if (free < 0 || free >= static_cast<int>(b.size())) return kEmpty;
  return b[free];
}

void Ledger::Reindex(NodeId node) {
  const int now = GpuCount(free_gpus(node));
  const int before = node_free_[node];
  if (now == before) return;
  node_free_[node] = now;
  const DomainId d = topology_->nodes()[node].domain;
  domain_hist_[d][before]--;
  domain_hist_[d][now]++;
  const NodeTypeId type = topology_->domains()[d].type;
  // Move the domain between buckets (swap-remove from the old one).
  auto& old_bucket = buckets_[type][domain_free_[d]];
  const int pos = bucket_pos_[d];
  old_bucket[pos] = old_bucket.back();
  bucket_pos_[old_bucket[pos]] = pos;
  old_bucket.pop_back();
  domain_free_[d] += now - before;
  auto& new_bucket = buckets_[type][domain_free_[d]];
  bucket_pos_[d] = static_cast<int>(new_bucket.size());
  new_bucket.push_back(d);
}

absl::Status Ledger::CheckInvariants() const {
  const Topology& t = *topology_;
  std::vector<GpuMask> held(t.nodes().size(), 0);
  std::vector<Milliwatts> rack(t.racks().size());
  for (size_t r = 0; r < t.racks().size(); ++r) rack[r] = t.racks()[r].idle;
  for (const auto& [id, a] : allocations_) {
    if (id != a.id) return absl::InternalError(absl::StrCat("allocation keyed ", id, " has id ", a.id));
    for (const NodeGpus& ng : a.nodes) {
      if (held[ng.node] & ng.gpus)
        return absl::InternalError(absl::StrCat("GPU held twice on ", t.nodes()[ng.node].name));
      held[ng.node] |= ng.gpus;
      rack[t.nodes()[ng.node].rack] += GpuCount(ng.gpus) * PerGpu(a, ng.node);
    }
  }
  std::vector<Milliwatts> pd(t.power_domains().size());
  for (size_t p = 0; p < pd.size(); ++p) pd[p] = 0;
  for (size_t r = 0; r < t.racks().size(); ++r) {
    if (rack[r] != rack_draw_[r])
      return absl::InternalError(absl::StrCat("rack ", t.racks()[r].name, " draw ", rack_draw_[r], " != ", rack[r]));
    for (PowerDomainId p : t.racks()[r].power_chain) pd[p] += rack[r];
  }
  for (size_t p = 0; p < pd.size(); ++p)
    if (pd[p] != pd_draw_[p])
      return absl::InternalError(absl::StrCat("power domain ", t.power_domains()[p].name, " draw mismatch"));
  for (size_t n = 0; n < held.size(); ++n) {
    if (held[n] != allocated_[n])
      return absl::InternalError(absl::StrCat("node ", t.nodes()[n].name, " mask mismatch"));
    if (node_free_[n] != GpuCount(free_gpus(static_cast<NodeId>(n))))
      return absl::InternalError(absl::StrCat("node ", t.nodes()[n].name, " free index stale"));
  }
  for (DomainId d = 0; d < static_cast<DomainId>(t.domains().size()); ++d) {
    int free = 0;
    std::vector<int> hist(domain_hist_[d].size(), 0);
    for (NodeId n : t.domains()[d].nodes) {
      free += node_free_[n];
      hist[node_free_[n]]++;
    }
    if (free != domain_free_[d] || hist != domain_hist_[d])
      return absl::InternalError(absl::StrCat("domain ", t.domains()[d].name, " index stale"));
    const auto& b = buckets_[t.domains()[d].type][free];
    if (bucket_pos_[d] >= static_cast<int>(b.size()) || b[bucket_pos_[d]] != d)
      return absl::InternalError(absl::StrCat("domain ", t.domains()[d].name, " not in its bucket"));
  }
  if (absl::Status s = CheckTallies(); !s.ok()) return s;
  if (absl::Status s = CheckHeadroom(); !s.ok()) return s;
  if (absl::Status groups = CheckPowerGroups(); !groups.ok()) return groups;
  return CheckPowerOrder();
}

absl::Status Ledger::CheckTallies() const {
  const Topology& t = *topology_;
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    for (const RackTypeTally& tally : rack_tallies_[r]) {
      RackTypeTally fresh{tally.type, 0, 0, 0, std::vector<int>(tally.up_by_free.size(), 0), 0};
      for (NodeId n : t.racks()[r].nodes) {
        if (t.nodes()[n].type != tally.type) continue;
        fresh.nodes++;
        if (health_[n] == NodeHealth::kDown) {
          fresh.down++;
        } else if (health_[n] == NodeHealth::kDrained) {
          fresh.drained++;
        } else {
          fresh.up_by_free[node_free_[n]]++;
          fresh.up_free_gpus += node_free_[n];
        }
      }
      if (fresh.nodes != tally.nodes || fresh.down != tally.down || fresh.drained != tally.drained ||
          fresh.up_by_free != tally.up_by_free || fresh.up_free_gpus != tally.up_free_gpus)
        return absl::InternalError(absl::StrCat("rack ", t.racks()[r].name, " tally stale"));
    }
  }
  return absl::OkStatus();
}

}  // namespace rackwise
