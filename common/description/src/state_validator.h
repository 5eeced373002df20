// The rules of a run-time state file (allocations, node health, cap overrides) checked against the cluster
// description it belongs to: known nodes, GPU indices in range, no GPU in two allocations, unique ids, caps that
// name a rack or power domain.
#pragma once

#include <string_view>

#include "rackwise/diagnostic.h"
#include "rackwise/v1/cluster.pb.h"
#include "rackwise/v1/state.pb.h"
#include "yaml_to_proto.h"

namespace rackwise {

// Appends a diagnostic for every problem in `state`; lines come from `lines` (line 0 when it is empty).
// Returns true when nothing is wrong.
bool CheckState(const v1::ClusterState& state, const v1::ClusterDescription& description, const SourceLines& lines,
                std::string_view file, Diagnostics* diagnostics);

}  // namespace rackwise
