// Request checking and the per-node verdict. See request_setup.h.
#include "request_setup.h"

#include <limits>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "rackwise/fallback_order.h"
#include "rackwise/power_bounds.h"
#include "rackwise/shadow_time.h"

namespace rackwise::internal {
namespace {

// Declared watts must lie within each node type's own limits (its floor is the GPU's idle share, so that no job
// is free). Types whose limits exclude the watts are dropped (their nodes say "wrong node type"); none left is
// a malformed request, with every type's floor named.
absl::Status KeepTypesThatTakeWatts(const Topology& t, double watts, std::vector<NodeTypeId>* types) {
  if (watts == 0 || types->empty()) return absl::OkStatus();
  const Milliwatts mw = WattsToMilliwatts(watts);
  std::string limits;
  std::erase_if(*types, [&](NodeTypeId type) {
    const NodeType& nt = t.node_types()[type];
    absl::StrAppend(&limits, limits.empty() ? "" : ", ", nt.name, " ", MilliwattsToWatts(nt.min_per_gpu), "..",
                    MilliwattsToWatts(nt.max_per_gpu), " W");
    return mw < nt.min_per_gpu || mw > nt.max_per_gpu;
  });
  if (!types->empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("watts_per_gpu ", watts,
                                                 " is outside what the job's node types take per GPU (", limits,
                                                 "; the floor is the GPU's share of idle power)"));
}

}  // namespace

absl::StatusOr<Locality> EffectiveLocality(const PlacementPolicy& policy, const PlacementRequest& r) {
  if (!std::isfinite(r.waited_seconds)) return absl::InvalidArgumentError("waited_seconds must be finite");
  for (const std::optional<double>& seconds : {r.fewest_domains_in_seconds, r.time_limit_seconds}) {
    if (seconds && !(*seconds >= 0 && std::isfinite(*seconds)))
      return absl::InvalidArgumentError("fewest_domains_in_seconds and time_limit_seconds must be finite and >= 0");
  }
  const Locality locality = r.locality.value_or(policy.default_locality);
  if (locality != Locality::kPreferred) return locality;
  // A preferred job waits for its fewest domains (is placed as `required`) while that is cheaper than spreading;
  // one started ahead of its turn by its own rule.
  const bool holds_out = r.started_by_backfill ? BackfillHoldsOut(r, policy)
                                               : PreferredHoldsOut(policy, r.waited_seconds,
                                                                   r.fewest_domains_in_seconds, r.time_limit_seconds);
  return holds_out ? Locality::kRequired : locality;
}

bool FewestTypesRequired(const PlacementRequest& r, Locality locality) {
  // EffectiveLocality is `preferred` only for a job that asked for it and does not hold out.
  return r.started_by_backfill && locality == Locality::kPreferred;
}

absl::StatusOr<RequestSetup> SetUpRequest(const Topology& t, const PlacementRequest& r) {
  const PlacementPolicy& policy = t.policy();
  if (r.gpus < 1) return absl::InvalidArgumentError(absl::StrCat("gpus must be at least 1, got ", r.gpus));
  if (r.gpus_per_node < 0)
    return absl::InvalidArgumentError(absl::StrCat("gpus_per_node must not be negative, got ", r.gpus_per_node));
  if (r.gpus_per_node > 0 && r.gpus % r.gpus_per_node != 0)
    return absl::InvalidArgumentError(
        absl::StrCat("gpus (", r.gpus, ") must be a multiple of gpus_per_node (", r.gpus_per_node, ")"));
  if (r.share_gpus < 0 || r.share_gpus > kMaxGpusPerNode)
    return absl::InvalidArgumentError(
        absl::StrCat("share_gpus must be in 0..", kMaxGpusPerNode, ", got ", r.share_gpus));
  if (r.share_gpus > 1 && r.gpus % r.share_gpus != 0)
    return absl::InvalidArgumentError(
        absl::StrCat("gpus (", r.gpus, ") must be a multiple of share_gpus (", r.share_gpus, ")"));
  if (r.share_gpus > 1 && r.gpus_per_node > 0 && r.gpus_per_node % r.share_gpus != 0)
    return absl::InvalidArgumentError(
        absl::StrCat("gpus_per_node (", r.gpus_per_node, ") must be a multiple of share_gpus (", r.share_gpus, ")"));
  if (absl::Status bad = CheckWattsPerGpu(r.watts_per_gpu); !bad.ok()) return bad;
  if (r.watts_per_gpu > 0 && (r.watts_per_gpu < policy.min_watts_per_gpu || r.watts_per_gpu > policy.max_watts_per_gpu))
    return absl::InvalidArgumentError(absl::StrCat("watts_per_gpu ", r.watts_per_gpu, " is outside the policy's ",
                                                   policy.min_watts_per_gpu, "..", policy.max_watts_per_gpu));
  RequestSetup s;
  absl::StatusOr<Locality> locality = EffectiveLocality(policy, r);
  if (!locality.ok()) return locality.status();
  s.locality = *locality;
  s.fewest_types_required = FewestTypesRequired(r, s.locality);
  const NodeId n = static_cast<NodeId>(t.nodes().size());
  auto check = [n](NodeId id) { return id >= 0 && id < n; };
  if (!r.allowed_nodes.empty()) {
    s.allowed.assign(n, 0);
    for (NodeId id : r.allowed_nodes) {
      if (!check(id)) return absl::InvalidArgumentError(absl::StrCat("allowed node id ", id, " is unknown"));
      s.allowed[id] = 1;
    }
  }
  if (!r.excluded_nodes.empty()) {
    if (s.allowed.empty()) s.allowed.assign(n, 1);
    for (NodeId id : r.excluded_nodes) {
      if (!check(id)) return absl::InvalidArgumentError(absl::StrCat("excluded node id ", id, " is unknown"));
      s.allowed[id] = 0;
    }
  }
  if (!r.eligible_nodes.empty()) {
    s.has_eligible = true;
    s.eligible_mask.assign(n, 0);
    for (NodeId id : r.eligible_nodes) {
      if (!check(id)) return absl::InvalidArgumentError(absl::StrCat("eligible node id ", id, " is unknown"));
      s.eligible_mask[id] = 1;
    }
    for (NodeId id : r.excluded_nodes) s.eligible_mask[id] = 0;  // checked above
  }
  // A list of every node (the Slurm face offers all it may use, often the whole cluster) restricts nothing:
  // the core then takes the unrestricted paths (the ledger's indexes and tallies) instead of visiting nodes.
  auto every = [](std::vector<char>& mask) {
    if (!mask.empty() && std::find(mask.begin(), mask.end(), 0) == mask.end()) mask.clear();
  };
  every(s.allowed);
  every(s.eligible_mask);
  if (r.node_type) {
    if (*r.node_type < 0 || *r.node_type >= static_cast<NodeTypeId>(t.node_types().size()))
      return absl::InvalidArgumentError(absl::StrCat("node type id ", *r.node_type, " is unknown"));
    s.types.push_back(*r.node_type);
  } else {
    for (NodeTypeId i = 0; i < static_cast<NodeTypeId>(t.node_types().size()); ++i) s.types.push_back(i);
  }
  if (absl::Status bad = KeepTypesThatTakeWatts(t, r.watts_per_gpu, &s.types); !bad.ok()) return bad;
  return s;
}

Milliwatts PerGpuFor(const Topology& t, const PlacementRequest& r, NodeTypeId type) {
  return r.watts_per_gpu > 0 ? WattsToMilliwatts(r.watts_per_gpu) : t.node_types()[type].per_gpu;
}

namespace {

// The checks that need no power figures. Sets *need to what the node's smallest share would draw.
std::optional<NodeReason> NodeLevelBlock(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s,
                                         NodeId n, Milliwatts* need) {
  const Topology& t = ledger.topology();
  const Node& node = t.nodes()[n];
  if (std::find(s.types.begin(), s.types.end(), node.type) == s.types.end()) return NodeReason::kWrongNodeType;
  const int least = ShareGranule(r);
  if (least > node.gpus) return NodeReason::kTooFewGpusOnNode;
  if (!s.allowed.empty() && !s.allowed[n]) return NodeReason::kNotAllowed;
  if (ledger.node_health(n) == NodeHealth::kDown) return NodeReason::kNodeDown;
  if (ledger.node_health(n) == NodeHealth::kDrained) return NodeReason::kNodeDrained;
  if (ledger.free_gpu_count(n) < least) return NodeReason::kInsufficientGpus;
  *need = least * PerGpuFor(t, r, node.type);
  return std::nullopt;
}

}  // namespace

std::optional<NodeReason> NodeBlock(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s, NodeId n) {
  Milliwatts need = 0;
  if (std::optional<NodeReason> why = NodeLevelBlock(ledger, r, s, n, &need)) return why;
  const Topology& t = ledger.topology();
  const RackId rack = t.nodes()[n].rack;
  const double reserve = t.policy().power_reserve_fraction;
  if (ledger.RackRoom(rack, reserve) < need) return NodeReason::kRackPower;
  for (PowerDomainId p : t.racks()[rack].power_chain)
    if (ledger.PowerDomainRoom(p, reserve) < need) return NodeReason::kPowerDomainPower;
  return std::nullopt;
}

RackPowerRoom PowerRoomOf(const Ledger& ledger, RackId rack) {
  const Topology& t = ledger.topology();
  const double reserve = t.policy().power_reserve_fraction;
  RackPowerRoom room;
  room.rack = ledger.RackRoom(rack, reserve);
  room.chain = std::numeric_limits<Milliwatts>::max();
  for (PowerDomainId p : t.racks()[rack].power_chain)
    room.chain = std::min(room.chain, ledger.PowerDomainRoom(p, reserve));
  return room;
}

std::optional<NodeReason> NodeBlockInRack(const Ledger& ledger, const PlacementRequest& r, const RequestSetup& s,
                                          NodeId n, const RackPowerRoom& room) {
  Milliwatts need = 0;
  if (std::optional<NodeReason> why = NodeLevelBlock(ledger, r, s, n, &need)) return why;
  if (room.rack < need) return NodeReason::kRackPower;
  if (room.chain < need) return NodeReason::kPowerDomainPower;
  return std::nullopt;
}

void NodeBlocks(const Ledger& ledger, const PlacementRequest& request, const RequestSetup& setup,
                absl::Span<const NodeId> nodes, std::vector<std::optional<NodeReason>>* out) {
  const Topology& t = ledger.topology();
  const NodeId count = static_cast<NodeId>(t.nodes().size());
  out->assign(nodes.size(), NodeReason::kNotAllowed);
  std::vector<std::optional<RackPowerRoom>> rooms(t.racks().size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] < 0 || nodes[i] >= count) continue;
    std::optional<RackPowerRoom>& room = rooms[t.nodes()[nodes[i]].rack];
    if (!room) room = PowerRoomOf(ledger, t.nodes()[nodes[i]].rack);
    (*out)[i] = NodeBlockInRack(ledger, request, setup, nodes[i], *room);
  }
}

}  // namespace rackwise::internal
