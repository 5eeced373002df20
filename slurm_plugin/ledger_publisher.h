// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres publishes its live ledger to StateSaveLocation/rackwise_state.yaml (every
// kStateInterval, when it changed) for `rackwise status --cluster rackwise.yaml --state ...`, and beside it the
// steered GPU limits (steered_limits.h) for the nodes' `rackwise-slurm-gpu-power follow`. With telemetry on, the
// publisher runs at least every telemetry interval and is woken when readings arrive, so that a steering decision
// is on disk a moment after the readings that made it.
//
// Thread safety: StartLocked is called under the select plugin's mutex `mu`. The publisher's own thread
// (StatePublisher) takes the snapshot with a try-lock of `mu`: when slurmctld is busy in the plugin it skips a round
// rather than wait, and the YAML and the disk writes happen outside the lock; no slurmctld lock ever waits on a
// node. Under `mu` the snapshot reads the model, the measured power and the jobs counted oversubscribed given at
// construction (and applies the parked readings), and the book of steered limits, which only it touches. The
// destructor unhooks the telemetry's wake-up and joins the thread: the plugin destroys this object before anything
// it reads.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cluster_model.h"
#include "measured_power.h"
#include "rackwise/oversubscribed_allocations.h"
#include "state_publisher.h"
#include "steered_limits.h"

namespace rackwise::slurm {

class LedgerPublisher {
 public:
  // What each snapshot reads, all guarded by `mu` and outliving this object: `model` (the plugin's, replaced when a
  // description is put in force; null before), `power` and `oversubscribed`.
  LedgerPublisher(std::timed_mutex* mu, const std::unique_ptr<ClusterModel>* model, MeasuredPower* power,
                  const OversubscribedAllocations* oversubscribed)
      : mu_(mu), model_(model), power_(power), oversubscribed_(oversubscribed) {}
  ~LedgerPublisher();
  LedgerPublisher(const LedgerPublisher&) = delete;
  LedgerPublisher& operator=(const LedgerPublisher&) = delete;

  // Starts publishing (once; nothing without a StateSaveLocation); later calls only follow a change of the
  // telemetry interval.
  void StartLocked();

 private:
  // The texts to write (the ledger, then the steered limits or nullopt to leave them); empty while `mu` is busy.
  std::vector<std::optional<std::string>> Snapshot();
  std::chrono::milliseconds IntervalLocked() const;

  std::timed_mutex* const mu_;
  const std::unique_ptr<ClusterModel>* const model_;
  MeasuredPower* const power_;
  const OversubscribedAllocations* const oversubscribed_;
  SteeredLimitsBook steered_book_;             // the steered limits file's generations (under mu_, the snapshot's)
  std::unique_ptr<StatePublisher> publisher_;  // last: its thread reads everything above
};

}  // namespace rackwise::slurm
