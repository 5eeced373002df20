// Oversubscription (policy.oversubscribe_pct): with steering on and every rack's telemetry fresh, a placement
// counts a job at less than the watts per GPU it declared, because steering lowers running jobs' limits as soon as
// the measured draw rises (power_steering.h): the caps hold by the measured draw, and the ledger still counts
// max(estimate, measured). The GPUs' limit stays what the job declared; the face remembers it and passes it to
// steering (SteeringFacts::declared). Pure: the face passes the telemetry state it has.
#pragma once

#include <string>

#include "rackwise/placement_request.h"
#include "rackwise/telemetry.h"
#include "rackwise/topology.h"

namespace rackwise {

struct OversubscribedWatts {
  bool applied = false;
  double counted_watts_per_gpu = 0;   // what the request now carries (0 when not applied: unchanged)
  double declared_watts_per_gpu = 0;  // the GPUs' limit (0 when not applied: the node type's default)
  std::string why_not;                // when not applied and the policy asks for it: why, one sentence
};

// Whether and how much to count a request at less than declared. Not applied when the policy's share is 0,
// steering is off (on_overdraw is not lower_limits), telemetry is not fresh on every rack, or the request leaves
// its watts to node types of different defaults (it names no watts, and may use more than one type). The counted
// watts are never below the least any type the request may use takes.
OversubscribedWatts CountOversubscribed(const Topology& topology, const PlacementRequest& request,
                                        const TelemetrySettings& telemetry, TelemetryState state);

// The request to place: `request` with counted_watts_per_gpu when applied, else unchanged.
PlacementRequest WithOversubscription(const PlacementRequest& request, const OversubscribedWatts& count);

}  // namespace rackwise
