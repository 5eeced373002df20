// The preempt verb's two steps past the extender's own records: the core's choice among kube-scheduler's
// proposals for one pod (alone, per node; in a group, for the group's pods not yet running, as one), and the
// eviction of a group's victims on nodes other than the one kube-scheduler is answered (victim_reduction.h).
//
// Free functions, no state: ExtenderService calls ReducePodPreemption with its mutex held (it reads the ledger and
// the gang reservations) and EvictVictimsElsewhere without it (each eviction is a call to the API server).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gang_reservations.h"
#include "pod_binder.h"
#include "pod_spec.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_request.h"
#include "victim_reduction.h"

namespace rackwise::k8s {

// `pod` with its GPUs and group resolved; `alone` is its request as a pod placed alone (ExtenderService's
// SinglePodRequest). A group holding free slots preempts nothing: its pods go there.
absl::StatusOr<ReducedPreemption> ReducePodPreemption(const Ledger& ledger, const GangReservations& gangs,
                                                      const PodInfo& pod, const PlacementRequest& alone,
                                                      const PreemptionProposal& proposal);

// Evicts `reduced.evict` (the group's victims on other nodes) through `binder`'s eviction API, so that a
// PodDisruptionBudget can refuse (429) before anything is deleted on the nominated node. A pod gone already is as
// good as evicted. The first refusal stops it and is returned as FailedPrecondition, saying how many were evicted;
// a null binder (standalone) refuses.
absl::Status EvictVictimsElsewhere(PodBinder* binder, const std::string& group, const ReducedPreemption& reduced);

}  // namespace rackwise::k8s
