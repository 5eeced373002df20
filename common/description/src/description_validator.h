// The semantic rules of a cluster description (what the schema alone cannot say): required fields, ranges,
// unique names, hostlists, references between node types, racks and power domains, cycles in the power
// hierarchy, rack-scale NVLink domains of one type, idle draw under every cap, policy ranges. Every problem is
// reported, each at the line of the field to edit.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "field_path_lines.h"
#include "rackwise/diagnostic.h"
#include "rackwise/power_bounds.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise {

// Appends a diagnostic for every rule `description` breaks. `lines` says where each field came from; when it
// is empty (a description built in memory), diagnostics carry line 0. Returns true when nothing is wrong.
bool CheckDescription(const v1::ClusterDescription& description, const FieldPathLines& lines, std::string_view file,
                      Diagnostics* diagnostics);

// One node of a description, as the hostlists of its racks name it.
struct DescribedNode {
  std::string name;
  int rack = -1;       // index into description.racks()
  int node_type = -1;  // index into description.node_types(); -1 when the rack names an unknown type
  int gpus = 0;        // GPUs per node (0 when the type is unknown)
};

// Every node of `description` in file order, skipping hostlists that do not expand (they are reported by
// CheckDescription) and stopping at kMaxClusterNodes.
std::vector<DescribedNode> DescribedNodes(const v1::ClusterDescription& description);

}  // namespace rackwise
