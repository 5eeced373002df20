// What a job asks for. Faces translate Slurm job records, pod specs and CLI flags into this.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rackwise/placement_policy.h"
#include "rackwise/topology.h"

namespace rackwise {

struct PlacementRequest {
  std::string id;
  int gpus = 0;                         // total, >= 1
  int gpus_per_node = 0;                // 0: any split; else every node gets exactly this many
  std::optional<Locality> locality;     // unset: the policy's default
  double watts_per_gpu = 0;             // 0: the node type's default draw per GPU
  std::vector<NodeId> allowed_nodes;    // empty: every node
  std::vector<NodeId> excluded_nodes;
  std::optional<NodeTypeId> node_type;  // unset: any type (a job never mixes types)
  double waited_seconds = 0;            // how long the job has been pending (see preferred_wait_seconds); the
                                        // core reads no clock, so faces pass it in
  bool report_refusal = true;           // false: a refusal is only "not now" (no per-node counts, no detail, and
                                        // `unresolvable` is not worked out); for callers that only need yes or
                                        // no, such as the simulator's backfill and reservations
};

}  // namespace rackwise
