// SPDX-License-Identifier: GPL-2.0-or-later
// Measured power in select/rackwise_cons_tres, and the answer to an overdraw. Polling runs in SlurmTelemetry's own
// thread with tight timeouts; here, at the next decision, the parked readings are applied to the live ledger (so
// pending reasons name measured watts through the core's refusal detail) and every change is logged once with
// Slurm's logger. on_overdraw in this face: every action raises the alarm (an error line naming the rack and its
// job ids) and the rack takes nothing more; requeue_newest also requeues the newest jobs on the rack (the core's
// PlanRequeueNewest) through slurmctld's RPC from a thread of its own (job_requeuer.h), once per overdraw;
// lower_limits steers (the core's PlanSteering) and logs each limit change; the publisher writes the limits for the
// nodes (ledger_publisher.h, steered_limits.h; docs/design.md, "Power steering").
//
// It holds the telemetry, the requeue thread (also used for a job that started outside its placement) and when
// each job in the ledger started (requeue_newest takes the newest).
//
// Thread safety: every ...Locked call, and telemetry(), is made under the select plugin's mutex, which guards this
// object and the model's ledger passed in. The poller's thread only hands readings to SlurmTelemetry (its own
// lock) and calls the on-delivered hook; the requeue thread only calls slurmctld's RPC. The destructor stops the
// poller, then the requeue thread after the call in progress.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "cluster_model.h"
#include "job_requeuer.h"
#include "rackwise/oversubscribed_allocations.h"
#include "slurm_telemetry.h"

namespace rackwise::slurm {

class MeasuredPower {
 public:
  // (Re)configures polling from the loaded description's text `yaml` (from `path`); the telemetry forgets what it
  // logged.
  void ConfigureLocked(const std::string& yaml, const std::string& path);
  // Applies the readings parked since the last call to `model`'s ledger, logging what changed, and answers the
  // overdraws a new round found (requeue_newest). Steering raises a job counted at less than it declares
  // (`oversubscribed`) back to what it declared, never above.
  void ApplyLocked(ClusterModel* model, const OversubscribedAllocations& oversubscribed);
  // The requeue thread, started on first use; null (logged) if it cannot start.
  JobRequeuer* RequeuerLocked();

  // Job `id` is in the ledger since `start_time` (requeue_newest's order).
  void StartedLocked(const std::string& id, int64_t start_time) { started_at_[id] = start_time; }
  void GoneLocked(const std::string& id) { started_at_.erase(id); }
  // The ledger is rebuilt: every job is recorded again.
  void ForgetStartsLocked() { started_at_.clear(); }

  const SlurmTelemetry& telemetry() const { return telemetry_; }
  // Called from the poller's thread each time readings arrive (null: none); see SlurmTelemetry::SetOnDelivered.
  void SetOnDelivered(std::function<void()> hook) { telemetry_.SetOnDelivered(std::move(hook)); }

 private:
  // on_overdraw: requeue_newest: queues the newest jobs of each rack that just went over its cap for requeue.
  void RequeueForOverdrawLocked(const ClusterModel& model);

  std::unique_ptr<JobRequeuer> requeuer_;                 // started on the first requeue that needs it
  absl::flat_hash_map<std::string, int64_t> started_at_;  // job id -> start time, for requeue_newest
  SlurmTelemetry telemetry_;                              // after requeuer_: its poller stops first
};

}  // namespace rackwise::slurm
