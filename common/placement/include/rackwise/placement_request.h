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
  int gpus = 0;                       // total, >= 1
  int gpus_per_node = 0;              // 0: any split; else every node gets exactly this many
  int share_gpus = 0;                 // any split in whole shares of this many GPUs (a pod's GPUs in a group of
                                      // pods): every node's part is a multiple of it; 0 or 1: any count. With
                                      // gpus_per_node it must divide gpus_per_node
  std::optional<Locality> locality;   // unset: the policy's default
  double watts_per_gpu = 0;           // 0: the node type's default draw per GPU
  std::vector<NodeId> allowed_nodes;  // empty: every node
  std::vector<NodeId> excluded_nodes;
  // The nodes the job may ever use (a Slurm job's partition), when the allowed ones are only those free now:
  // `required`'s fewest NVLink domains are counted over these, so that a rack busy at this instant does not lower
  // what `required` insists on. Empty: counted over the allowed nodes. Excluded nodes are left out of both.
  std::vector<NodeId> eligible_nodes;
  std::optional<NodeTypeId> node_type;  // unset: any type (a job never mixes types)
  double waited_seconds = 0;            // how long the job has been pending (see preferred_wait_seconds); the
                                        // core reads no clock, so faces pass it in
  std::optional<double> fewest_domains_in_seconds;  // when the face expects the job's fewest NVLink domains to be
                                                    // free, from the running jobs' time limits (FewestDomainsIn);
                                                    // unset: not known. Read only for `preferred` (PreferredHoldsOut)
  std::optional<double> time_limit_seconds;         // the job's time limit (how long it may run), if the face knows it
  // Started ahead of its turn by a backfill scheduler (Slurm's backfill; the simulator's): a `preferred` job then
  // follows BackfillHoldsOut (fallback_order.h), and when it may spread, it spreads only over node types that can
  // never give it its fewest domains.
  bool started_by_backfill = false;
  bool report_refusal = true;  // false: a refusal is only "not now" (no per-node counts, no detail, and
                               // `unresolvable` is not worked out); for callers that only need yes or
                               // no, such as the simulator's backfill and reservations
};

// The smallest part of the job one node can take: gpus_per_node, else the share size (at least 1). Every node's
// part of a placement is a multiple of it.
inline int ShareGranule(const PlacementRequest& r) {
  return r.gpus_per_node > 0 ? r.gpus_per_node : (r.share_gpus > 1 ? r.share_gpus : 1);
}

// What a node with `free` GPUs could give the job, ignoring power: gpus_per_node (or nothing), else its free GPUs
// in whole shares.
inline int NodeShareOf(const PlacementRequest& r, int free) {
  if (r.gpus_per_node > 0) return free >= r.gpus_per_node ? r.gpus_per_node : 0;
  const int granule = ShareGranule(r);
  return free / granule * granule;
}

}  // namespace rackwise
