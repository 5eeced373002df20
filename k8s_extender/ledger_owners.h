// The shared power ledger's owner names for the extender's own allocations. Every booking of the extender's
// (a pod bound alone, a gang slot planned at filter time, an operator's placement) goes through the face's
// ledger::LedgerBooking before it counts in the extender's ledger, and every release too, so that Slurm and
// Kubernetes never pass a cap together; these functions name what is booked.
//
// Owners: "k8s/<namespace>/<pod uid>" for a pod placed alone; a gang slot is booked before any pod holds it,
// so it is owned by the slot itself, "k8s/<namespace>/<kind>:<group>#<n>" (GangSlotOwner).
#pragma once

#include <string>

namespace rackwise::k8s {

// "k8s/<namespace>/<pod uid>" (the pod's name when the uid is unknown). `key` is "<namespace>/<name>".
std::string PodOwner(const std::string& key, const std::string& uid);
// "<namespace>/<kind>/<group>#<n>" -> "k8s/<namespace>/<kind>:<group>#<n>": an owner has three segments.
std::string GangSlotOwner(const std::string& slot_id);
// An operator's placement over gRPC (Place with commit) under id `id`: "k8s/_operator/<id>", every byte of the id
// outside [A-Za-z0-9.:_-] written as %XX so that the owner keeps three segments. "_operator" cannot be a
// Kubernetes namespace (a DNS label has no '_'), so no pod's owner can take it; under "k8s/", the extender's
// reconcile keeps it with the pods.
std::string OperatorOwner(const std::string& id);

}  // namespace rackwise::k8s
