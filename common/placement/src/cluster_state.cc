// See cluster_state.h.
#include "rackwise/cluster_state.h"

#include <bit>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rackwise/power_bounds.h"

namespace rackwise {

NodeHealth NodeHealthFromProto(v1::NodeHealth h) {
  switch (h) {
    case v1::NODE_HEALTH_DRAINED: return NodeHealth::kDrained;
    case v1::NODE_HEALTH_DOWN: return NodeHealth::kDown;
    default: return NodeHealth::kUp;
  }
}

v1::NodeHealth NodeHealthToProto(NodeHealth h) {
  switch (h) {
    case NodeHealth::kDrained: return v1::NODE_HEALTH_DRAINED;
    case NodeHealth::kDown: return v1::NODE_HEALTH_DOWN;
    case NodeHealth::kUp: break;
  }
  return v1::NODE_HEALTH_UP;
}

namespace {

// The writer's readings as one reading that holds every allocation (applied after them).
absl::Status ApplyMeasured(const v1::ClusterState& state, Ledger* ledger) {
  if (state.measured().empty()) return absl::OkStatus();
  const Topology& t = ledger->topology();
  if (absl::Status bad = CheckReclaimPct(state.measured_reclaim_pct()); !bad.ok())
    return absl::InvalidArgumentError(absl::StrCat("measured_reclaim_pct ", bad.message()));
  std::vector<std::optional<Milliwatts>> racks(t.racks().size());
  for (const v1::RackReading& reading : state.measured()) {
    std::optional<RackId> r = t.FindRack(reading.rack());
    if (!r) return absl::InvalidArgumentError(absl::StrCat("measured draw of unknown rack '", reading.rack(), "'"));
    if (absl::Status s = CheckMeasuredKw(reading.measured_kw()); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("rack ", reading.rack(), ": ", s.message()));
    racks[*r] = WattsToMilliwatts(reading.measured_kw() * 1000.0);
  }
  ledger->SetMeasuredDraw(racks, state.measured_reclaim_pct() / 100, /*count_recent=*/false);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Allocation> AllocationFromProto(const Topology& t, const v1::Allocation& a) {
  if (absl::Status s = CheckWattsPerGpu(a.watts_per_gpu()); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("allocation ", a.id(), ": ", s.message()));
  Allocation out;
  out.id = a.id();
  out.per_gpu = WattsToMilliwatts(a.watts_per_gpu());
  for (const v1::NodeGpus& ng : a.nodes()) {
    std::optional<NodeId> n = t.FindNode(ng.node());
    if (!n)
      return absl::InvalidArgumentError(absl::StrCat("allocation ", a.id(), " names unknown node '", ng.node(), "'"));
    GpuMask mask = 0;
    for (uint32_t gpu : ng.gpus()) {
      if (gpu >= static_cast<uint32_t>(kMaxGpusPerNode))
        return absl::InvalidArgumentError(absl::StrCat("allocation ", a.id(), ": GPU index ", gpu, " out of range"));
      mask |= GpuMask{1} << gpu;
    }
    out.nodes.push_back({*n, mask});
  }
  return out;
}

v1::Allocation AllocationToProto(const Topology& t, const Allocation& a) {
  v1::Allocation out;
  out.set_id(a.id);
  out.set_watts_per_gpu(MilliwattsToWatts(a.per_gpu));
  for (const NodeGpus& ng : a.nodes) {
    v1::NodeGpus* png = out.add_nodes();
    png->set_node(t.nodes()[ng.node].name);
    for (int gpu : GpuIndices(ng.gpus)) png->add_gpus(static_cast<uint32_t>(gpu));
  }
  return out;
}

absl::Status ApplyClusterState(const v1::ClusterState& state, Ledger* ledger) {
  const Topology& t = ledger->topology();
  for (const v1::NodeStatus& ns : state.nodes()) {
    std::optional<NodeId> n = t.FindNode(ns.node());
    if (!n) return absl::InvalidArgumentError(absl::StrCat("state names unknown node '", ns.node(), "'"));
    ledger->SetNodeHealth(*n, NodeHealthFromProto(ns.health()));
    for (uint32_t gpu : ns.failed_gpus()) {
      if (gpu >= static_cast<uint32_t>(t.nodes()[*n].gpus))
        return absl::InvalidArgumentError(absl::StrCat("node ", ns.node(), " has no GPU ", gpu));
      ledger->SetGpuFailed(*n, static_cast<int>(gpu), true);
    }
  }
  for (const v1::CapOverride& cap : state.caps()) {
    if (absl::Status s = CheckCapKw(cap.power_cap_kw()); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("cap override '", cap.name(), "': ", s.message()));
    const Milliwatts mw = WattsToMilliwatts(cap.power_cap_kw() * 1000.0);
    if (std::optional<RackId> r = t.FindRack(cap.name())) {
      ledger->SetRackCap(*r, mw);
    } else if (std::optional<PowerDomainId> p = t.FindPowerDomain(cap.name())) {
      ledger->SetPowerDomainCap(*p, mw);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("cap names unknown rack or power domain '", cap.name(), "'"));
    }
  }
  for (const v1::Allocation& a : state.allocations()) {
    absl::StatusOr<Allocation> out = AllocationFromProto(t, a);
    if (!out.ok()) return out.status();
    if (absl::Status s = ledger->Commit(*out, CommitMode::kRecover); !s.ok()) return s;
  }
  return ApplyMeasured(state, ledger);
}

v1::ClusterState CaptureClusterState(const Ledger& ledger) {
  const Topology& t = ledger.topology();
  v1::ClusterState out;
  for (const Allocation* a : ledger.Allocations()) *out.add_allocations() = AllocationToProto(t, *a);
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    if (ledger.node_health(n) == NodeHealth::kUp && ledger.failed_gpus(n) == 0) continue;
    v1::NodeStatus* ns = out.add_nodes();
    ns->set_node(t.nodes()[n].name);
    ns->set_health(NodeHealthToProto(ledger.node_health(n)));
    for (int gpu : GpuIndices(ledger.failed_gpus(n))) ns->add_failed_gpus(static_cast<uint32_t>(gpu));
  }
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    if (ledger.rack_cap(r) == t.racks()[r].cap) continue;
    v1::CapOverride* c = out.add_caps();
    c->set_name(t.racks()[r].name);
    c->set_power_cap_kw(static_cast<double>(ledger.rack_cap(r)) / 1e6);
  }
  for (PowerDomainId p = 0; p < static_cast<PowerDomainId>(t.power_domains().size()); ++p) {
    if (ledger.power_domain_cap(p) == t.power_domains()[p].cap) continue;
    v1::CapOverride* c = out.add_caps();
    c->set_name(t.power_domains()[p].name);
    c->set_power_cap_kw(static_cast<double>(ledger.power_domain_cap(p)) / 1e6);
  }
  for (RackId r = 0; r < static_cast<RackId>(t.racks().size()); ++r) {
    const std::optional<Milliwatts> now = ledger.measured_rack_draw_now(r);
    if (!now) continue;
    v1::RackReading* reading = out.add_measured();
    reading->set_rack(t.racks()[r].name);
    reading->set_measured_kw(static_cast<double>(*now) / 1e6);
  }
  if (out.measured_size() > 0) out.set_measured_reclaim_pct(ledger.reclaim_fraction() * 100);
  return out;
}

}  // namespace rackwise
