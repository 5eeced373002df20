// See telemetry_tracker.h.
#include "rackwise/telemetry_tracker.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rackwise {

void TelemetryTracker::Reset() {
  state_ = TelemetryState::kOff;
  overdrawn_.clear();
  lowered_.clear();
  new_overdraws_.clear();
  limits_.clear();
  previous_limits_.clear();
  requeue_.clear();
}

void TelemetryTracker::Steer(const Ledger& ledger, const SteeringFacts& given, std::vector<std::string>* log) {
  SteeringFacts facts = given;
  for (const auto& [id, limit] : limits_) facts.limits.try_emplace(id, limit);
  // This round's readings may predate last round's changes: judge them against the higher of the two limits.
  for (const Allocation* a : ledger.Allocations()) {
    auto before = previous_limits_.find(a->id);
    auto now = limits_.find(a->id);
    if (now == limits_.end()) continue;  // at its declared watts, the most it could have drawn
    facts.reading_limits.try_emplace(a->id, before == previous_limits_.end() ? std::numeric_limits<Milliwatts>::max()
                                                                             : std::max(before->second, now->second));
  }
  const bool changed_last_round = previous_limits_ != limits_;
  LedgerSteering in;
  const SteeringPlan plan = PlanLedgerSteering(ledger, facts, &in);
  absl::flat_hash_map<std::string, Milliwatts> next;
  for (size_t a = 0; a < in.allocations.size(); ++a) {
    const SteeredAllocation& al = in.allocations[a];
    // Without fresh readings everywhere, headroom is not known to have returned: limits only go down. Nor right
    // after a change: a reading judged against the higher, older limit understates the draw the jobs do not
    // explain (what they stopped drawing is taken for headroom), so it may show a cap met, never headroom back.
    const bool rise = state_ == TelemetryState::kFresh && !changed_last_round;
    const Milliwatts to = rise ? plan.limits[a] : std::min(plan.limits[a], al.current);
    if (to != al.current)
      log->push_back(absl::StrFormat("steer: %s: %.0f W per GPU -> %.0f W (declared %.0f W)", al.id,
                                     MilliwattsToWatts(al.current), MilliwattsToWatts(to),
                                     MilliwattsToWatts(al.declared)));
    if (to < al.declared) {
      next[al.id] = to;
      lowered_.push_back({al.id, al.declared, to});
    }
  }
  for (int a : plan.requeue) {
    requeue_.push_back(in.allocations[a].id);
    log->push_back(
        absl::StrCat("steer: ", in.allocations[a].id, " to requeue: the floors of the jobs there cannot keep a cap"));
  }
  for (int s : plan.unmet_scopes)
    log->push_back(absl::StrCat("steer: ", in.scopes[s].name,
                                " stays above its cap less the reserve with no job left to "
                                "lower"));
  previous_limits_ = std::move(limits_);
  limits_ = std::move(next);
}

std::vector<std::string> TelemetryTracker::Apply(const TelemetrySettings& settings, const PowerReadings& readings,
                                                 Ledger* ledger, const SteeringFacts& facts) {
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
  std::vector<RackId> racks_now;
  std::vector<PowerDomainId> domains_now;
  lowered_.clear();
  new_overdraws_.clear();
  for (const Overdraw& o : FindOverdraws(*ledger)) {
    const bool is_rack = o.rack != kNoId;
    std::vector<int32_t>& now = is_rack ? racks_now : domains_now;
    const std::vector<int32_t>& before = is_rack ? overdrawn_ : overdrawn_domains_;
    const int32_t id = is_rack ? o.rack : o.power_domain;
    now.push_back(id);
    if (std::find(before.begin(), before.end(), id) == before.end()) {
      log.push_back(absl::StrCat("OVERDRAW: ", OverdrawMessage(*ledger, o), "; nothing more is placed there"));
      new_overdraws_.push_back(o);
    }
  }
  requeue_.clear();
  if (settings.on_overdraw == OverdrawAction::kLowerLimits) Steer(*ledger, facts, &log);
  for (RackId r : overdrawn_) {
    if (std::find(racks_now.begin(), racks_now.end(), r) == racks_now.end())
      log.push_back(absl::StrCat("overdraw cleared: rack ", t.racks()[r].name, " is back under its cap"));
  }
  for (PowerDomainId d : overdrawn_domains_) {
    if (std::find(domains_now.begin(), domains_now.end(), d) == domains_now.end())
      log.push_back(
          absl::StrCat("overdraw cleared: power domain ", t.power_domains()[d].name, " is back under its cap"));
  }
  overdrawn_ = std::move(racks_now);
  overdrawn_domains_ = std::move(domains_now);
  return log;
}

}  // namespace rackwise
