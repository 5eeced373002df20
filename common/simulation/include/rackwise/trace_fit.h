// Whether a trace fits a cluster before it is replayed: jobs that ask for more GPUs per node than any node has,
// and jobs the cluster can never hold (too large, or more than its caps can ever power), grouped by shape. So a
// trace generated for another cluster is caught when it is written, not found later as rejected jobs.
#pragma once

#include <string>
#include <vector>

#include "rackwise/topology.h"
#include "rackwise/trace.h"

namespace rackwise {

struct TraceMisfit {
  int gpus = 0;
  int gpus_per_node = 0;
  double watts_per_gpu = 0;
  int jobs = 0;        // jobs of this shape in the trace
  std::string reason;  // the placer's, e.g. "this cluster can never give it more than 80"
};

struct TraceFit {
  int jobs = 0;                     // in the trace
  int misfit_jobs = 0;              // that can never run on the cluster
  std::vector<TraceMisfit> shapes;  // one per shape that can never run, largest first
};

// Asks the placer, once per shape (gpus, gpus_per_node, watts), whether the job could run on the empty cluster.
TraceFit CheckTraceFits(const Topology& topology, const std::vector<TraceJob>& jobs);

}  // namespace rackwise
