// The other direction: what Slurm or Kubernetes would hold for a described cluster. `rackwise export` writes it
// so a site can start its scheduler configuration from the description, and the import tests round-trip
// through it (description -> slurm.conf & co. or a NodeList -> import -> the same description).
#pragma once

#include <string>

#include "k8s_inventory.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::adopt {

struct SlurmExport {
  std::string slurm_conf;      // ClusterName, NodeName lines with Gres=gpu:<type>:<count>, a partition
  std::string gres_conf;       // Name=gpu Type= File=/dev/nvidia[0-N]
  std::string topology_tree;   // a leaf switch per rack, a switch per scalable unit above its racks
  std::string topology_block;  // a block per rack-scale NVLink domain; empty when there is none
};

SlurmExport ExportToSlurm(const v1::ClusterDescription& description);

// A NodeList as `kubectl get nodes -o json` prints it, with GPU Feature Discovery's labels and the site's rack
// and scalable-unit labels (`labels`; an empty name leaves that label out).
std::string ExportToK8sNodes(const v1::ClusterDescription& description, const K8sLabels& labels);

}  // namespace rackwise::adopt
