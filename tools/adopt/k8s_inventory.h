// Reads a cluster's GPU nodes from `kubectl get nodes -o json`: GPU Feature Discovery's labels
// (nvidia.com/gpu.count, nvidia.com/gpu.product, nvidia.com/gpu.clique: the NVLink domain of a multi-node NVLink
// system such as GB200 NVL72) and the labels the site uses for racks and scalable units.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "node_inventory.h"
#include "rackwise/diagnostic.h"
#include "slurm_inventory.h"

namespace rackwise::adopt {

struct K8sLabels {
  std::string rack;           // e.g. topology.kubernetes.io/rack; empty: racks are the cliques
  std::string scalable_unit;  // e.g. a block or zone label; empty: none
};

inline constexpr char kGpuCountLabel[] = "nvidia.com/gpu.count";
inline constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";
inline constexpr char kGpuCliqueLabel[] = "nvidia.com/gpu.clique";

// Nodes without GPUs (no count label and no nvidia.com/gpu capacity) are left out. A GPU node without the rack
// label, a count that is not a number, or JSON that is not a NodeList is a diagnostic naming the node.
absl::StatusOr<Inventory> InventoryFromK8sNodes(const ConfigText& nodes_json, const K8sLabels& labels,
                                                Diagnostics* diagnostics);

}  // namespace rackwise::adopt
