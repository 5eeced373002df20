// `rackwise simulate --preemption`: the trace's priorities replayed with preemption, rackwise's victim choice
// (PlanPreemption) against cons_tres's (victims in priority order until the job fits), side by side with the
// ratios (rackwise/preemption_replay.h has the model).
#pragma once

#include <vector>

#include "rackwise/topology.h"
#include "rackwise/trace.h"

namespace rackwise::cli {

// Replays under both policies and prints a table (or JSON); an exit code.
int RunPreemptionReplay(const Topology& topology, const std::vector<TraceJob>& jobs, bool json);

}  // namespace rackwise::cli
