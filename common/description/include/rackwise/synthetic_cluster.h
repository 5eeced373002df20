// Cluster descriptions built in code rather than read from YAML: for benchmarks, property tests and examples.
// Each block is a run of identical racks of one reference system (see shared notes/hardware.md figures).
#pragma once

#include <string>
#include <vector>

#include "rackwise/v1/cluster.pb.h"

namespace rackwise {

enum class ReferenceSystem {
  kHgxH100,     // 8 GPUs, NVLink = node, 700 W GPUs, 10.2 kW node, 2.5 kW idle
  kHgxB200,     // 8 GPUs, NVLink = node, 1000 W GPUs, 14.3 kW node, 3.6 kW idle
  kGb200Nvl72,  // 4 GPUs per tray, NVLink = rack (18 trays), 1200 W GPUs, 6.6 kW tray, 1.5 kW idle
};

// The node type of a reference system, named "hgx-h100", "hgx-b200" or "gb200-tray".
v1::NodeType ReferenceNodeType(ReferenceSystem system);

struct RackBlock {
  ReferenceSystem system = ReferenceSystem::kHgxH100;
  int racks = 1;
  int nodes_per_rack = 4;  // 18 for NVL72
  double rack_cap_kw = 0;  // 0: nodes x node_watts (a cap that never binds)
  int racks_per_su = 8;    // racks sharing one scalable unit (rail group)
  int racks_per_row = 0;   // 0: no row power domains
  double row_cap_kw = 0;   // 0: racks_per_row x rack cap
};

struct SyntheticClusterSpec {
  std::string name = "synthetic";
  std::vector<RackBlock> blocks;
  double hall_cap_kw = 0;  // 0: no hall domain above the rows
};

// Rack, node, SU and row names are unique across blocks ("b0-r0001", "b0-r0001-n01", "b0-su001", "b0-row01").
v1::ClusterDescription BuildSyntheticCluster(const SyntheticClusterSpec& spec);

}  // namespace rackwise
