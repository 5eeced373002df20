// What a polling face keeps between telemetry rounds: the last state and the racks and power domains in overdraw,
// so that each change is reported once (a source going stale, a rack or a feed entering or leaving overdraw)
// rather than every poll.
// Pure like the rest of the core: readings and their ages come in, log lines come out.
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "rackwise/ledger.h"
#include "rackwise/ledger_steering.h"
#include "rackwise/telemetry.h"

namespace rackwise {

class TelemetryTracker {
 public:
  // Measures, applies to `ledger` (allocations made since the previous reading still count on top), and returns
  // one line per change: "telemetry: stale (3 of 4 racks measured; ...)", "OVERDRAW: rack ...; nothing more is
  // placed there", "steer: <id>: 962 W per GPU -> 862 W (held below its declared 962 W)", "overdraw cleared: ...".
  // With on_overdraw: lower_limits every round steers (ledger_steering.h): the limits kept from the previous
  // round are the ones in force, `facts` adds what the face knows (measured draw per job, priority, start).
  std::vector<std::string> Apply(const TelemetrySettings& settings, const PowerReadings& readings, Ledger* ledger,
                                 const SteeringFacts& facts = {});
  // Forgets what was reported (the next round reports afresh).
  void Reset();

  TelemetryState state() const { return state_; }
  const std::vector<RackId>& overdrawn_racks() const { return overdrawn_; }
  const std::vector<PowerDomainId>& overdrawn_power_domains() const { return overdrawn_domains_; }
  // With on_overdraw: lower_limits, every allocation held below its declared watts per GPU (from: declared, to:
  // the limit to apply), sorted by id; an allocation absent here runs at its declared watts (else empty).
  const std::vector<LimitChange>& lowered_limits() const { return lowered_; }
  // The limit each steered allocation is held at, by id (absent: its declared watts).
  const absl::flat_hash_map<std::string, Milliwatts>& steered_limits() const { return limits_; }
  // With on_overdraw: lower_limits, the allocations the floors could not keep under a cap, newest first: the
  // face requeues them as requeue_newest does.
  const std::vector<std::string>& steering_requeue() const { return requeue_; }
  // The racks and power domains that went over their cap in the last Apply (each overdraw is reported once, when it
  // starts), for a face that acts on it (on_overdraw: requeue_newest).
  const std::vector<Overdraw>& new_overdraws() const { return new_overdraws_; }

 private:
  TelemetryState state_ = TelemetryState::kOff;
  std::vector<RackId> overdrawn_;
  std::vector<PowerDomainId> overdrawn_domains_;
  std::vector<LimitChange> lowered_;
  std::vector<Overdraw> new_overdraws_;
  absl::flat_hash_map<std::string, Milliwatts> limits_, previous_limits_;  // this round's and the one before
  std::vector<std::string> requeue_;
  // One steering round: updates limits_, lowered_ and requeue_, logging each change.
  void Steer(const Ledger& ledger, const SteeringFacts& given, std::vector<std::string>* log);
};

}  // namespace rackwise
