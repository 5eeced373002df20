// Moving run-time state between a Ledger and its schema form (v1::ClusterState): state files for
// `rackwise place --state`, the extender's snapshots, and restarts that must not lose an allocation.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rackwise/cluster_description.h"  // the state file format: ParseClusterState, ClusterStateToYaml
#include "rackwise/ledger.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise {

// Applies health, failed GPUs and cap overrides, then records every allocation with CommitMode::kRecover (what
// runs is recorded even if a cap was lowered since). Names must exist (ParseClusterState checks them); an
// unknown name or a GPU held twice is an error, and then the ledger may hold part of the state. Measured rack
// draws, when the state has them, are applied last as one reading that already holds every allocation.
absl::Status ApplyClusterState(const v1::ClusterState& state, Ledger* ledger);

// One allocation in its schema form (node names, GPU indices, watts) and back. Errors name the allocation: an
// unknown node, a GPU index out of range, watts per GPU out of bounds. The ledger checks the rest on commit.
absl::StatusOr<Allocation> AllocationFromProto(const Topology& topology, const v1::Allocation& allocation);
v1::Allocation AllocationToProto(const Topology& topology, const Allocation& allocation);

// The schema's health as the ledger's (unspecified is up) and back.
NodeHealth NodeHealthFromProto(v1::NodeHealth health);
v1::NodeHealth NodeHealthToProto(NodeHealth health);

// The ledger's state: allocations (sorted by id), nodes that are not up or have failed GPUs, caps that differ
// from the description, and each rack's measured draw where telemetry has a fresh reading.
v1::ClusterState CaptureClusterState(const Ledger& ledger);

}  // namespace rackwise
