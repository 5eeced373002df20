// See telemetry_tracker.h.
#include "rackwise/telemetry_tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rackwise {

void TelemetryTracker::Reset() {
  state_ = TelemetryState::kOff;
  overdrawn_.clear();
  lowered_.clear();
  new_overdraws_.clear();
}

std::vector<std::string> TelemetryTracker::Apply(const TelemetrySettings& settings, const PowerReadings& readings,
                                                 Ledger* ledger) {
  const Topology& t = ledger->topology();
  std::vector<std::string> log;
  const MeasuredDraw measured = MeasureRacks(t, settings, readings);
  ApplyMeasuredDraw(measured, settings, /*count_recent=*/true, ledger);
  if (measured.state != state_) {
    std::string line = absl::StrCat(
        "telemetry: ", TelemetryStateName(measured.state), " (", measured.measured_racks, " of ", t.racks().size(),
        " racks measured", measured.state == TelemetryState::kStale ? "; the others count their estimates" : "", ")");
    for (const std::string& p : measured.problems) absl::StrAppend(&line, "; ", p);
    log.push_back(std::move(line));
    state_ = measured.state;
  }
  std::vector<RackId> now;
  lowered_.clear();
  new_overdraws_.clear();
  for (const Overdraw& o : FindOverdraws(*ledger)) {
    now.push_back(o.rack);
    const bool is_new = std::find(overdrawn_.begin(), overdrawn_.end(), o.rack) == overdrawn_.end();
    if (is_new) {
      log.push_back(absl::StrCat("OVERDRAW: ", OverdrawMessage(*ledger, o), "; nothing more is placed there"));
      new_overdraws_.push_back(o);
    }
    if (settings.on_overdraw != OverdrawAction::kLowerLimits) continue;
    for (const LimitChange& c : PlanLowerLimits(*ledger, o)) {
      if (is_new)
        log.push_back(absl::StrFormat("OVERDRAW: lower_limits: %s on rack %s: %.0f W per GPU -> %.0f W", c.allocation,
                                      t.racks()[o.rack].name, MilliwattsToWatts(c.from_per_gpu),
                                      MilliwattsToWatts(c.to_per_gpu)));
      lowered_.push_back(c);
    }
  }
  for (RackId r : overdrawn_) {
    if (std::find(now.begin(), now.end(), r) == now.end())
      log.push_back(absl::StrCat("overdraw cleared: rack ", t.racks()[r].name, " is back under its cap"));
  }
  overdrawn_ = std::move(now);
  return log;
}

}  // namespace rackwise
