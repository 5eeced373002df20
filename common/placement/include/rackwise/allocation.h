// What a job holds: GPU indices on nodes, and the watts each of those GPUs is charged.
#pragma once

#include <string>
#include <vector>

#include "rackwise/topology.h"

namespace rackwise {

struct NodeGpus {
  NodeId node = kNoId;
  GpuMask gpus = 0;
  friend bool operator==(const NodeGpus&, const NodeGpus&) = default;
};

struct Allocation {
  std::string id;               // unique within a ledger (Slurm job id, pod group, ...)
  std::vector<NodeGpus> nodes;  // no node twice
  Milliwatts per_gpu = 0;       // 0: each node type's default draw per GPU
  friend bool operator==(const Allocation&, const Allocation&) = default;

  int gpu_count() const;
};

}  // namespace rackwise
