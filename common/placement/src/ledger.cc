// The ledger: allocations, health and caps, keeping the placer's indexes current. See ledger.h for the contract.
#include "rackwise/ledger.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "deep_copied_ptr_impl.h"
#include "placement_indexes.h"

namespace rackwise {
namespace {

std::string Kw(Milliwatts mw) { return absl::StrFormat("%.1f kW", static_cast<double>(mw) / 1e6); }

// One counter for the whole process, so that a ledger built anew (a reconfigure) never repeats a generation
// another ledger had.
std::atomic<uint64_t> next_generation{1};

}  // namespace

Ledger::Ledger(const Topology& topology) : topology_(&topology) {
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
  domain_free_.assign(topology.domains().size(), 0);
  for (DomainId d = 0; d < static_cast<DomainId>(topology.domains().size()); ++d)
    for (NodeId node : topology.domains()[d].nodes) domain_free_[d] += node_free_[node];
  indexes_ = DeepCopiedPtr<internal::PlacementIndexes>(std::make_unique<internal::PlacementIndexes>(*this));
}

template class DeepCopiedPtr<internal::PlacementIndexes>;

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

void Ledger::Changed() {
  generation_ = next_generation.fetch_add(1, std::memory_order_relaxed);
  if (indexes_.get() != nullptr) indexes_->SetGeneration(generation_);  // (null only while constructing)
}

void Ledger::Apply(const Allocation& a, int sign) {
  Changed();
  RackId changed = kNoId;  // the rack whose draw moved last, brought into the headroom index once per run of nodes
  for (const NodeGpus& ng : a.nodes) {
    const Node& node = topology_->nodes()[ng.node];
    if (changed != kNoId && changed != node.rack) indexes_->RackPowerChanged(*this, changed);
    changed = node.rack;
    const Milliwatts watts = GpuCount(ng.gpus) * PerGpu(a, ng.node) * sign;
    rack_draw_[node.rack] += watts;
    for (PowerDomainId p : topology_->racks()[node.rack].power_chain) pd_draw_[p] += watts;
    if (sign > 0) added_since_reading_[node.rack] += watts;
    if (rack_measured_[node.rack]) Readjust(node.rack);
    if (sign > 0) {
      allocated_[ng.node] |= ng.gpus;
    } else {
      allocated_[ng.node] &= ~ng.gpus;
    }
    Reindex(ng.node, health_[ng.node]);
  }
  if (changed != kNoId) indexes_->RackPowerChanged(*this, changed);
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
  const NodeHealth before = health_[node];
  health_[node] = health;
  Reindex(node, before);
  indexes_->RackGroupChanged(topology_->nodes()[node].rack);
}

void Ledger::SetGpuFailed(NodeId node, int gpu, bool failed) {
  if (gpu < 0 || gpu >= topology_->nodes()[node].gpus) return;
  Changed();
  if (failed) {
    failed_[node] |= GpuMask{1} << gpu;
  } else {
    failed_[node] &= ~(GpuMask{1} << gpu);
  }
  Reindex(node, health_[node]);
  indexes_->RackGroupChanged(topology_->nodes()[node].rack);
}

// Clamped to the bounds of power_bounds.h: faces check caps with CheckCapKw first, and the ledger's sums stay
// exact whatever a caller passes.
Milliwatts Ledger::BoundedCap(Milliwatts cap) {
  return std::clamp<Milliwatts>(cap, 0, WattsToMilliwatts(kMaxCapKw * 1000.0));
}
void Ledger::SetRackCap(RackId rack, Milliwatts cap) {
  Changed();
  rack_cap_[rack] = BoundedCap(cap);
  indexes_->RackPowerChanged(*this, rack);
}
void Ledger::SetPowerDomainCap(PowerDomainId domain, Milliwatts cap) {
  Changed();
  pd_cap_[domain] = BoundedCap(cap);
  indexes_->PowerDomainPowerChanged(*this, domain);
}

Milliwatts Ledger::RackHeadroom(RackId rack, double reserve_fraction) const {
  Milliwatts h = RackRoom(rack, reserve_fraction);
  for (PowerDomainId p : topology_->racks()[rack].power_chain) h = std::min(h, PowerDomainRoom(p, reserve_fraction));
  return std::max<Milliwatts>(0, h);
}

void Ledger::Reindex(NodeId node, NodeHealth health_before) {
  const int before = node_free_[node];
  const int now = GpuCount(free_gpus(node));
  node_free_[node] = now;
  const DomainId d = topology_->nodes()[node].domain;
  domain_free_[d] += now - before;
  indexes_->NodeMoved(node, {health_before, before}, {health_[node], now}, domain_free_[d]);
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
  return indexes_->Check(*this);
}

}  // namespace rackwise
