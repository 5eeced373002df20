// What one rack offers a job by free GPUs, from the ledger's per-rack tallies: O(node types x GPUs per node)
// instead of a visit to every node of the rack. The simulator bounds what a job could get with it before it asks
// the placer (simulator_policies.cc).
#pragma once

#include "rackwise/ledger.h"
#include "rackwise/topology.h"

namespace rackwise {

struct RackFreeGpus {
  // Free GPUs on the rack's up nodes that a job taking `gpus_per_node` on each node could use (every free GPU
  // when 0), summed over node types.
  long long usable = 0;
  // The most free GPUs one NVLink domain of the rack offers, over node types: a rack-scope type's usable GPUs
  // (its nodes in the rack form one domain), a node-scope type's fullest up node.
  long long largest_domain = 0;
};

RackFreeGpus RackFreeFor(const Ledger& ledger, RackId rack, int gpus_per_node);

}  // namespace rackwise
