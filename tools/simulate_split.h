// `rackwise simulate --split-owners`: one trace split between two schedulers (slurm, k8s) on shared racks, with
// one shared power ledger, with static shares of every budget, or both side by side with the GPU-hours sharing
// gains as a ratio (rackwise/split_simulator.h has the model).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rackwise/simulator.h"
#include "rackwise/topology.h"
#include "rackwise/trace.h"

namespace rackwise::cli {

// The queue's figures of one replay (jobs, completed, rejected, GPU-hours, makespan, waits, utilisation), the
// keys every `simulate --json` answer starts with.
nlohmann::ordered_json QueueMetricsJson(const SimMetrics& m);

struct SplitFlags {
  std::string mode;          // "shared", "static" or "compare"; empty: no split
  double static_share = -1;  // owner slurm's share in static mode; negative: not given (0.5)
  double horizon_h = -1;     // hours after the first submit; negative: not given (the last submit)
};

// Why these flags cannot go together, as the message to print (flag named); empty when they can.
std::string CheckSplitFlags(const SplitFlags& split, const std::string& policy, bool telemetry,
                            const std::string& placements);

// Replays and prints (a table, or JSON); an exit code. `placements`: a JSONL file of every placement (one mode).
int RunSplit(const Topology& topology, const std::vector<TraceJob>& jobs, const SimOptions& base,
             const SplitFlags& split, bool json, const std::string& placements);

}  // namespace rackwise::cli
