// The rules of a run-time state file (allocations, node health, cap overrides) checked against the cluster
// description it belongs to: known nodes, GPU indices in range, no GPU in two allocations, unique ids, caps that
// name a rack or power domain.
#pragma once

#include <string_view>

#include "line_table.h"
#include "rackwise/diagnostic.h"
#include "rackwise/v1/cluster.pb.h"
#include "rackwise/v1/state.pb.h"

namespace rackwise {

// Appends a diagnostic for every problem in `state`, at the lines `lines` recorded while reading it (line 0 for
// what it has no line for). Returns true when nothing is wrong.
bool CheckState(const v1::ClusterState& state, const v1::ClusterDescription& description, const LineTable& lines,
                std::string_view file, Diagnostics* diagnostics);

}  // namespace rackwise
