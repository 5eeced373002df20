// A job trace: the CSV that `rackwise simulate` replays and `rackwise trace` writes.
//
//   id,submit,duration,gpus,gpus_per_node,locality,watts_per_gpu
//
// submit and duration are seconds (submit from the start of the trace, duration > 0); gpus >= 1; gpus_per_node
// 0 or empty = any split, else it divides gpus; locality required|preferred|none or empty (the cluster policy's
// default); watts_per_gpu empty or 0 = the node type's draw. An optional column `measured_watts_per_gpu` holds
// what each GPU of the job really drew (as telemetry saw it), for `rackwise simulate`'s meter and `--telemetry`;
// empty, or the column absent, = not measured (the job draws what it is counted at). An optional column `priority`
// (an integer, higher first; empty or absent = 0) is what the preemption replay (rackwise/preemption_replay.h) orders
// and preempts by; the FIFO replay ignores it. Columns may come in any
// order; blank lines and lines starting with '#' are skipped. Every problem is reported as
// FILE:LINE: field 'name': what is wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rackwise/diagnostic.h"
#include "rackwise/locality.h"  // ParseLocality and LocalityName, used for the locality column
#include "rackwise/placement_policy.h"

namespace rackwise {

struct TraceJob {
  std::string id;
  double submit = 0;    // seconds from the start of the trace
  double duration = 0;  // seconds of run time, > 0
  int gpus = 0;
  int gpus_per_node = 0;              // 0: any split
  std::optional<Locality> locality;   // unset: the cluster policy's default
  double watts_per_gpu = 0;           // 0: the node type's draw
  int line = 0;                       // where it came from (0 when generated), for messages
  double measured_watts_per_gpu = 0;  // what each GPU really drew; 0: not measured (draws what it is counted at)
  int64_t priority = 0;               // higher preempts lower; |priority| <= kMaxPreemptionPriority
};

inline constexpr char kTraceHeader[] = "id,submit,duration,gpus,gpus_per_node,locality,watts_per_gpu";
// The optional column after kTraceHeader's (TraceToCsv writes it only when some job was measured).
inline constexpr char kTraceMeasuredColumn[] = "measured_watts_per_gpu";
// The optional priority column (TraceToCsv writes it, last, only when some job has a priority other than 0).
inline constexpr char kTracePriorityColumn[] = "priority";

// Parses a trace held in memory; `file` names it in diagnostics. Returns the jobs in file order, or
// InvalidArgument (message = the first diagnostic) with every problem in `diagnostics` (at most `max_diagnostics`).
absl::StatusOr<std::vector<TraceJob>> ParseTrace(std::string_view csv, std::string_view file, Diagnostics* diagnostics,
                                                 size_t max_diagnostics = 50);
// Reads `path` and calls ParseTrace.
absl::StatusOr<std::vector<TraceJob>> LoadTrace(const std::string& path, Diagnostics* diagnostics);

// Writes jobs as CSV with kTraceHeader (and kTraceMeasuredColumn when a job has a measurement);
// ParseTrace(TraceToCsv(jobs)) gives the jobs back (with line numbers).
std::string TraceToCsv(const std::vector<TraceJob>& jobs);

}  // namespace rackwise
