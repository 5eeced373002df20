// Converter for the Microsoft Philly GPU trace (per-job condensation: timestamp,duration,num_gpus,gpu_time,cluster;
// see the trace's own README) into the trace CSV of rackwise/trace.h.
//
// Rules: rows are sorted by submit time (ties keep file order); submit = seconds from the first submit (wall clock,
// no time zone, so no daylight-saving jumps); duration rounds up to whole seconds (at least 1); a job of more
// than node_gpus GPUs asks for whole nodes: gpus_per_node = the largest divisor of its size that is <= node_gpus
// (16 -> 8, 24 -> 8, 12 -> 6 on 8-GPU nodes); smaller jobs may split (0). Locality is `preferred`: Philly's
// scheduler asked for a packed placement and relaxed it when a job had waited (ATC '19). Ids are "philly-<line>",
// the row's line in the source file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/diagnostic.h"
#include "rackwise/trace.h"

namespace rackwise {

struct PhillyConvertParams {
  int node_gpus = 8;            // GPUs per node of the target cluster
  std::string virtual_cluster;  // non-empty: keep only this `cluster` column value
  size_t max_jobs = 0;          // > 0: keep the first N jobs by submit time
};

absl::StatusOr<std::vector<TraceJob>> ConvertPhillyTrace(std::string_view csv, std::string_view file,
                                                         const PhillyConvertParams& params, Diagnostics* diagnostics);

}  // namespace rackwise
