// kube-scheduler's proposals -> the core's victims (see victim_reduction.h).
#include "victim_reduction.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace rackwise::k8s {
namespace {

// One proposed node, resolved against the ledger.
struct ResolvedNode {
  std::string name;
  NodeId node = kNoId;
  int64_t proposed_pdb_violations = 0;
  std::vector<std::string> kept_as_proposed;    // UIDs of pods holding no GPUs in the ledger
  std::vector<PreemptionCandidate> candidates;  // pods holding GPUs on this node, of lower priority
};

// A candidate's way back to kube-scheduler's terms.
struct VictimPod {
  std::string uid, pod_key, node_name;
};

struct ResolvedProposal {
  std::vector<ResolvedNode> nodes;
  absl::flat_hash_map<std::string, VictimPod> by_allocation;
};

bool HoldsGpusOn(const Allocation& a, NodeId node) {
  return std::any_of(a.nodes.begin(), a.nodes.end(), [&](const NodeGpus& ng) { return ng.node == node && ng.gpus; });
}

// Proposals on nodes the description does not name are dropped (nothing rackwise can plan there). A proposed pod
// whose GPUs the ledger holds on ANOTHER node, or whose priority is not below the preemptor's, is never chosen:
// evicting it frees nothing here, or is not preemption.
ResolvedProposal Resolve(const Ledger& ledger, const PreemptionProposal& proposal) {
  ResolvedProposal out;
  for (const auto& [name, proposed] : *proposal.victims) {
    std::optional<NodeId> id = ledger.topology().FindNode(name);
    if (!id) continue;
    ResolvedNode node{name, *id, proposed.num_pdb_violations, {}, {}};
    for (const std::string& uid : proposed.pod_uids) {
      std::optional<KnownVictim> known = proposal.lookup(uid);
      const Allocation* held = known && !known->allocation_id.empty() ? ledger.Find(known->allocation_id) : nullptr;
      if (held == nullptr) {
        node.kept_as_proposed.push_back(uid);
        continue;
      }
      if (!HoldsGpusOn(*held, *id) || known->priority >= proposal.preemptor_priority) continue;
      if (!out.by_allocation.try_emplace(held->id, VictimPod{uid, known->pod_key, name}).second) continue;
      node.candidates.push_back({held->id, known->priority, LostGpuHours(held->gpu_count(), known->running_ms)});
    }
    out.nodes.push_back(std::move(node));
  }
  return out;
}

// The answer for one node: the core's victims there (by UID), then the pods kept as proposed.
MetaVictims Answer(const ResolvedProposal& resolved, const ResolvedNode& node,
                   const std::vector<std::string>& victims) {
  MetaVictims kept;
  for (const std::string& id : victims) {
    const VictimPod& pod = resolved.by_allocation.at(id);
    if (pod.node_name == node.name) kept.pod_uids.push_back(pod.uid);
  }
  kept.pod_uids.insert(kept.pod_uids.end(), node.kept_as_proposed.begin(), node.kept_as_proposed.end());
  // kube-scheduler counted the violations of the set it proposed; a subset violates at most as many, and at most
  // one per victim. Only its ranking of nodes reads this.
  kept.num_pdb_violations = std::min<int64_t>(node.proposed_pdb_violations, static_cast<int64_t>(kept.pod_uids.size()));
  return kept;
}

}  // namespace

double LostGpuHours(int gpus, int64_t running_ms) {
  const double hours = static_cast<double>(std::max<int64_t>(running_ms, 0)) / 3'600'000.0;
  return std::clamp(hours * std::max(gpus, 0), 0.0, kMaxLostGpuHours);
}

absl::StatusOr<ReducedPreemption> ReduceVictimsPerNode(const Ledger& ledger, const PlacementRequest& request,
                                                       const PreemptionProposal& proposal,
                                                       const PreemptionLimits& limits) {
  const ResolvedProposal resolved = Resolve(ledger, proposal);
  ReducedPreemption out;
  for (const ResolvedNode& node : resolved.nodes) {
    PlacementRequest on_node = request;
    on_node.allowed_nodes = {node.node};
    absl::StatusOr<std::optional<PreemptionPlan>> plan = PlanPreemption(ledger, on_node, node.candidates, limits);
    if (!plan.ok()) return plan.status();
    if (!plan->has_value()) continue;  // no subset of the proposals makes room here (GPUs, domains or power)
    MetaVictims kept = Answer(resolved, node, (*plan)->victims);
    if (kept.pod_uids.empty()) continue;  // fits as things are: nothing to preempt here
    out.nodes.emplace(node.name, std::move(kept));
  }
  if (out.nodes.empty()) {
    out.why_none =
        "no proposed node has room for the pod with its proposed victims gone (GPUs, NVLink domains "
        "or power caps less the reserve)";
  }
  return out;
}

absl::StatusOr<ReducedPreemption> ReduceVictimsForGroup(const Ledger& ledger, const PlacementRequest& group_request,
                                                        const PreemptionProposal& proposal,
                                                        const PreemptionLimits& limits) {
  const ResolvedProposal resolved = Resolve(ledger, proposal);
  std::vector<PreemptionCandidate> every;
  for (const ResolvedNode& node : resolved.nodes)
    every.insert(every.end(), node.candidates.begin(), node.candidates.end());
  absl::StatusOr<std::optional<PreemptionPlan>> plan = PlanPreemption(ledger, group_request, every, limits);
  if (!plan.ok()) return plan.status();
  ReducedPreemption out;
  if (!plan->has_value()) {
    out.why_none = absl::StrCat("group ", group_request.id, " (", group_request.gpus,
                                " GPUs) has no room even with every proposed victim gone");
    return out;
  }
  const PreemptionPlan& chosen = **plan;
  if (chosen.victims.empty()) {
    out.why_none = absl::StrCat("group ", group_request.id, " fits without preemption: its next filter reserves it");
    return out;
  }
  // The node kube-scheduler will nominate: one the group's plan uses, else any; the most victims; then by name.
  absl::flat_hash_map<std::string, int> victims_on;
  for (const std::string& id : chosen.victims) ++victims_on[resolved.by_allocation.at(id).node_name];
  auto used = [&](NodeId n) {
    return std::any_of(chosen.decision.nodes.begin(), chosen.decision.nodes.end(),
                       [&](const NodeGpus& ng) { return ng.node == n; });
  };
  const ResolvedNode* best = nullptr;
  auto rank = [&](const ResolvedNode& n) { return std::make_tuple(!used(n.node), -victims_on[n.name], n.name); };
  for (const ResolvedNode& node : resolved.nodes) {
    if (victims_on.contains(node.name) && (best == nullptr || rank(node) < rank(*best))) best = &node;
  }
  out.nodes.emplace(best->name, Answer(resolved, *best, chosen.victims));
  for (const std::string& id : chosen.victims) {
    const VictimPod& pod = resolved.by_allocation.at(id);
    if (pod.node_name != best->name) out.evict.push_back(pod.pod_key);
  }
  out.lost_gpu_hours = chosen.lost_gpu_hours;
  return out;
}

}  // namespace rackwise::k8s
