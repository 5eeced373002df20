// Reading and checking a cluster description (rackwise.yaml) and a run-time state file.
//
// The YAML maps onto the protobuf schema in proto/rackwise/v1/ field by field, so the schema is defined once.
// Every problem is reported with its line; parsing never throws and never crashes on hostile input.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "rackwise/diagnostic.h"
#include "rackwise/v1/cluster.pb.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise {

// Parses and validates a description held in memory. `file` names it in diagnostics. Returns the description
// when there is no problem; otherwise fills `diagnostics` (every problem found, not just the first) and returns
// InvalidArgument whose message is the first diagnostic.
absl::StatusOr<v1::ClusterDescription> ParseClusterDescription(std::string_view yaml, std::string_view file,
                                                               Diagnostics* diagnostics);

// Reads `path` and calls ParseClusterDescription. A missing or unreadable file is one diagnostic.
absl::StatusOr<v1::ClusterDescription> LoadClusterDescription(const std::string& path, Diagnostics* diagnostics);

// Checks a description that is already in memory (e.g. built by `rackwise size` or received over gRPC).
// Diagnostics carry line 0. Returns true when there is no problem.
bool ValidateClusterDescription(const v1::ClusterDescription& description, std::string_view file,
                                Diagnostics* diagnostics);

// A state file: allocations, node health, cap overrides. Node and rack names are checked against `description`.
absl::StatusOr<v1::ClusterState> ParseClusterState(std::string_view yaml, std::string_view file,
                                                   const v1::ClusterDescription& description, Diagnostics* diagnostics);
absl::StatusOr<v1::ClusterState> LoadClusterState(const std::string& path, const v1::ClusterDescription& description,
                                                  Diagnostics* diagnostics);

// A state file's text (the format ParseClusterState reads), e.g. the ledger the Slurm plugin publishes.
std::string ClusterStateToYaml(const v1::ClusterState& state);

// Writes a description back as YAML in the documented key order (used by `rackwise size --emit-cluster`).
std::string ClusterDescriptionToYaml(const v1::ClusterDescription& description);

}  // namespace rackwise
