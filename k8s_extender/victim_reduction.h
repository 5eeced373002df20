// kube-scheduler's preemption proposals, reduced to the core's victims. kube-scheduler's dry run proposes, for
// each node where the pod could run after preemption, the lower-priority pods it would delete there, judging GPUs
// by count alone. The core (PlanPreemption) chooses among those proposals the cheapest set that really makes room:
// the pod (or the pod's whole group) in its fewest NVLink domains, under every power cap less the reserve once the
// victims are gone. This file only translates between the two: it never adds a victim kube-scheduler did not
// propose on a node, and it leaves pods the ledger holds no GPUs for as kube-scheduler proposed them (they were
// proposed for resources rackwise does not count: CPU, memory).
//
// A pod alone: each proposed node is planned on its own (the pod may use only that node; its candidates are the
// proposals on that node). Nodes where no subset of the proposals makes room are dropped; the others keep the
// core's victims.
//
// A pod of a group (gang): the group preempts as one. Its missing pods are planned as one job over the whole
// cluster, the candidates being every proposal on every node, so the victims may lie on several nodes. kube-scheduler
// deletes victims on one node only (the node it nominates), so the answer names exactly one node, the one the
// group's plan uses holding the most victims, and the victims on other nodes are returned for the face to evict
// through the eviction API (which honours PodDisruptionBudgets).
//
// Pure: no I/O, no clock (each known victim carries how long it has run).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "extender_wire.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_request.h"
#include "rackwise/preemption.h"

namespace rackwise::k8s {

// What the extender knows of a pod kube-scheduler proposes as a victim.
struct KnownVictim {
  std::string pod_key;        // "namespace/name"
  std::string allocation_id;  // its GPUs in the ledger; empty: it holds none there (kept as proposed)
  int64_t priority = 0;       // spec.priority
  int64_t running_ms = 0;     // since it started: the work it would lose, per GPU
};
// nullopt: a pod the extender does not know (no GPUs of its own): kept as proposed.
using VictimLookup = std::function<std::optional<KnownVictim>(const std::string& uid)>;

struct PreemptionProposal {
  const std::map<std::string, MetaVictims>* victims;  // kube-scheduler's, by node name
  int64_t preemptor_priority = 0;                     // proposals of this priority or above are never chosen
  VictimLookup lookup;
};

struct ReducedPreemption {
  std::map<std::string, MetaVictims> nodes;  // the answer to kube-scheduler (never a node without victims)
  std::vector<std::string> evict;            // pod keys the face evicts itself: a group's victims on other nodes
  double lost_gpu_hours = 0;                 // a group: its victims' lost work over every node
  std::string why_none;                      // when `nodes` is empty: why, for the decision log
};

// A pod alone: `request` is the pod's (its allowed nodes are set per proposed node here).
absl::StatusOr<ReducedPreemption> ReduceVictimsPerNode(const Ledger& ledger, const PlacementRequest& request,
                                                       const PreemptionProposal& proposal,
                                                       const PreemptionLimits& limits = {});
// A group: `group_request` plans the group's missing pods as one job (GroupRequest).
absl::StatusOr<ReducedPreemption> ReduceVictimsForGroup(const Ledger& ledger, const PlacementRequest& group_request,
                                                        const PreemptionProposal& proposal,
                                                        const PreemptionLimits& limits = {});

// A victim's lost work: its GPUs in the ledger x the hours it has run, within the core's bounds.
double LostGpuHours(int gpus, int64_t running_ms);

}  // namespace rackwise::k8s
