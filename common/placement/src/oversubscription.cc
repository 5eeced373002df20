// See oversubscription.h.
#include "rackwise/oversubscription.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rackwise {

OversubscribedWatts CountOversubscribed(const Topology& t, const PlacementRequest& r, const TelemetrySettings& tel,
                                        TelemetryState state) {
  OversubscribedWatts out;
  const double share = t.policy().oversubscribe_fraction;
  if (share <= 0) return out;
  if (!tel.enabled || tel.on_overdraw != OverdrawAction::kLowerLimits) {
    out.why_not = "oversubscription needs steering (telemetry.on_overdraw: lower_limits)";
    return out;
  }
  if (state != TelemetryState::kFresh) {
    out.why_not = absl::StrCat("oversubscription is off while telemetry is ", TelemetryStateName(state),
                               ": jobs count their declared watts");
    return out;
  }
  // The node types the request may use, and the least any of them lets a job declare.
  double declared = r.watts_per_gpu;
  double floor = 0;
  int types = 0;
  for (NodeTypeId type = 0; type < static_cast<NodeTypeId>(t.node_types().size()); ++type) {
    if (r.node_type && *r.node_type != type) continue;
    const NodeType& nt = t.node_types()[type];
    ++types;
    floor = std::max(floor, MilliwattsToWatts(nt.min_per_gpu));
    if (r.watts_per_gpu <= 0) {
      if (declared > 0 && declared != MilliwattsToWatts(nt.per_gpu)) {
        out.why_not = "oversubscription needs the job's watts per GPU: its node types count different defaults";
        return out;
      }
      declared = MilliwattsToWatts(nt.per_gpu);
    }
  }
  if (types == 0 || declared <= 0) return out;
  out.applied = true;
  out.declared_watts_per_gpu = declared;
  out.counted_watts_per_gpu = std::max(floor, declared * (1 - share));
  return out;
}

PlacementRequest WithOversubscription(const PlacementRequest& request, const OversubscribedWatts& count) {
  PlacementRequest out = request;
  if (count.applied) out.watts_per_gpu = count.counted_watts_per_gpu;
  return out;
}

}  // namespace rackwise
