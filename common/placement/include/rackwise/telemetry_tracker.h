// What a polling face keeps between telemetry rounds: the last state and the racks in overdraw, so that each
// change is reported once (a source going stale, a rack entering or leaving overdraw) rather than every poll.
// Pure like the rest of the core: readings and their ages come in, log lines come out.
#pragma once

#include <string>
#include <vector>

#include "rackwise/ledger.h"
#include "rackwise/telemetry.h"

namespace rackwise {

class TelemetryTracker {
 public:
  // Measures, applies to `ledger` (allocations made since the previous reading still count on top), and returns
  // one line per change: "telemetry: stale (3 of 4 racks measured; ...)", "OVERDRAW: rack ...; nothing more is
  // placed there", "OVERDRAW: lower_limits: <id> on rack <r>: 962 W per GPU -> 862 W", "overdraw cleared: ...".
  std::vector<std::string> Apply(const TelemetrySettings& settings, const PowerReadings& readings, Ledger* ledger);
  // Forgets what was reported (the next round reports afresh).
  void Reset();

  TelemetryState state() const { return state_; }
  const std::vector<RackId>& overdrawn_racks() const { return overdrawn_; }
  // With on_overdraw: lower_limits, the lowered limits for the allocations on overdrawn racks (else empty).
  const std::vector<LimitChange>& lowered_limits() const { return lowered_; }
  // The racks that went over their cap in the last Apply (each overdraw is reported once, when it starts), for
  // a face that acts on it (on_overdraw: requeue_newest).
  const std::vector<Overdraw>& new_overdraws() const { return new_overdraws_; }

 private:
  TelemetryState state_ = TelemetryState::kOff;
  std::vector<RackId> overdrawn_;
  std::vector<LimitChange> lowered_;
  std::vector<Overdraw> new_overdraws_;
};

}  // namespace rackwise
