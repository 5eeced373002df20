// Reads a cluster's GPU nodes from Slurm's own configuration: slurm.conf (ClusterName, NodeName lines with their
// Gres=gpu[:type]:count, NodeName=DEFAULT), gres.conf (Name=gpu lines: Type, Count or File=), and topology.conf
// in either form: topology/tree (a leaf switch's nodes are a rack, the switch above it a scalable unit) or
// topology/block (a block of several nodes is one NVLink domain, e.g. a GB200 NVL72 rack). Both forms may be
// given (Slurm 24.11 can run a tree and a block topology side by side).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "node_inventory.h"
#include "rackwise/diagnostic.h"

namespace rackwise::adopt {

struct ConfigText {
  std::string file;  // as the administrator named it, for FILE:LINE messages
  std::string text;
};

struct SlurmConfigs {
  ConfigText slurm_conf;
  std::vector<ConfigText> gres_confs;      // zero or one, in practice
  std::vector<ConfigText> topology_confs;  // zero, one or two (tree and block)
};

// Every problem (a bad hostlist, a node declared twice, counts that disagree, a topology naming an unknown node)
// is a diagnostic at its FILE:LINE; the result is an error when there is any.
absl::StatusOr<Inventory> InventoryFromSlurm(const SlurmConfigs& configs, Diagnostics* diagnostics);

}  // namespace rackwise::adopt
