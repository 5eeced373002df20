// SPDX-License-Identifier: GPL-2.0-or-later
// Measured power for select/rackwise_cons_tres, free of Slurm: a background thread polls the description's
// Prometheus server (tight timeouts) and parks the latest readings here; slurmctld's scheduling thread takes
// them at its next decision (under the plugin's own mutex, never waiting on the network or on slurmctld's
// locks), applies them to the ledger and gets log lines for what changed (each state change once, racks
// entering and leaving overdraw).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "rackwise/ledger.h"
#include "rackwise/telemetry.h"
#include "rackwise/telemetry_tracker.h"

namespace rackwise::telemetry {
class TelemetryPoller;
}

namespace rackwise::slurm {

class SlurmTelemetry {
 public:
  SlurmTelemetry();
  ~SlurmTelemetry();

  // (Re)starts polling when the settings changed, stops it when telemetry is off. Returns a log line when it
  // changed anything.
  std::string Configure(const TelemetrySettings& settings);
  const TelemetrySettings& settings() const { return settings_; }
  // What the last ApplyLatest found (racks over their cap, which of them went over just then).
  const TelemetryTracker& tracker() const { return tracker_; }

  // Hands readings in (the poller does; tests too), stamped with when they were fetched.
  void Deliver(const PowerReadings& readings);
  // Applies the readings delivered since the last call, if any, with their ages brought up to now, and returns
  // the log lines for what changed. Without new readings, nothing changes (the ledger keeps the last reading
  // until one arrives that says otherwise; the poller delivers a failure as readings too).
  // `facts`: what the plugin knows beyond the ledger for steering (the declared watts of jobs counted at less).
  std::vector<std::string> ApplyLatest(Ledger* ledger, const SteeringFacts& facts = {});
  // Whether the last ApplyLatest applied a round (tracker() then describes it; otherwise it describes an older
  // round, whose overdraws were already acted on and may name jobs gone since).
  bool applied_round() const { return applied_round_; }
  // Forgets what was logged (after the ledger was rebuilt: the next readings are applied and logged afresh).
  void Reset();
  // Called (from the poller's thread) each time readings are delivered: the plugin wakes its publisher, so that a
  // steering decision reaches the nodes without waiting for the next publishing round.
  void SetOnDelivered(std::function<void()> hook);
  // What the steered limits file lists now: with on_overdraw: lower_limits, the jobs held below their declared
  // watts; otherwise none. nullopt while steering has not run since the ledger was rebuilt (a reload): the limits
  // are not known yet, and listing none would send every steered job back up for a round.
  std::optional<std::vector<LimitChange>> LimitsToPublish() const;

 private:
  TelemetrySettings settings_;
  std::unique_ptr<telemetry::TelemetryPoller> poller_;
  std::mutex mu_;  // guards latest_ and fetched_ (the poller's thread writes them)
  std::optional<PowerReadings> latest_;
  std::chrono::steady_clock::time_point fetched_;
  std::function<void()> on_delivered_;  // guarded by mu_
  bool steered_ = false;                // a steering round ran since the last Reset
  bool applied_round_ = false;
  TelemetryTracker tracker_;  // touched only by the scheduling thread (under the plugin's mutex)
};

}  // namespace rackwise::slurm
