// An independent checker for `rackwise simulate --placements` files. It shares no code with the simulator, the
// ledger or the topology: it reads the description (the protobuf message), expands the hostlists itself through
// the hostlist parser, applies the power model of docs/design.md from scratch and sweeps the placements over time.
//
// It confirms that no GPU index is held by two jobs at once, that every line is well formed and agrees with the
// trace (GPU count, duration or the slowed duration, start not before submit) and the description (nodes, racks, NVLink
// domain count), and it measures the kW-seconds that every rack and power domain spends above its cap. Draw is what the
// hardware draws: a job with a measured_watts_per_gpu in the trace draws that, whatever it declared.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rackwise/trace.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::check {

struct CheckReport {
  int placements = 0;
  std::vector<std::string> errors;  // empty when the file is consistent and no GPU is shared
  double rack_violation_kws = 0;
  double domain_violation_kws = 0;
  int excursions = 0;  // times a rack's or power domain's draw went above its cap (for a positive time)
  double peak_rack_kw = 0;
  std::map<std::string, double> over_kws;  // per rack or power domain with any violation
  // Jobs that want locality (any but `none`) and, of them, those in their fewest NVLink domains by size, counted
  // here from the description (power may forbid that minimum: a power-aware minimum is never fewer).
  int wanting_locality = 0;
  int wanting_locality_at_fewest = 0;
};

// `spread_slowdown`: as `rackwise simulate --spread-slowdown`; a job outside its fewest NVLink domains (counted
// here from the description) must run that much longer than its trace duration.
CheckReport CheckPlacements(const v1::ClusterDescription& description, const std::vector<TraceJob>& trace,
                            std::string_view jsonl, double spread_slowdown = 0);

}  // namespace rackwise::check
