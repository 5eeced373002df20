// SPDX-License-Identifier: GPL-2.0-or-later
// The Slurm face of the shared power ledger (rackwise-ledger), free of Slurm so that it is unit-tested
// without a daemon: select/rackwise_cons_tres makes one when rackwise.yaml has a `ledger:` section.
//
// It wraps a LedgerLink (ledger_service/ledger_link.h) with owner prefix "slurm/<ClusterName>/": a job's
// allocation lives in the plugin's ledger under its job id and in the shared ledger under
// "slurm/<ClusterName>/<jobid>". Reserve is called inside the placement decision, Release at job end; both run
// under the plugin's mutex, which guards the plugin's ledger. A thread of its own keeps the link in step with the
// ledger service: every second in shared mode (a List, to see the other owners' draw), every few seconds in
// fallback (one attempt to reach it), and at once when asked (after the plugin rebuilt its list from job_list:
// restart, reconfigure). It takes the plugin's mutex for each sync, with a bounded wait so that stopping never
// waits on it; slurmctld's decisions never wait on a retry of an unreachable ledger (in fallback, Reserve and
// Release stay local). The same thread writes the fallback metrics as a Prometheus text file.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "periodic_thread.h"
#include "rackwise/ledger.h"
#include "rackwise/topology.h"
#include "rackwise/v1/cluster.pb.h"

namespace rackwise::ledger {
class LedgerLink;
}

namespace rackwise::slurm {

// "slurm/<cluster>/", or InvalidArgument when ClusterName cannot be an owner segment (ledger_owner.h).
absl::StatusOr<std::string> SlurmOwnerPrefix(absl::string_view cluster_name);

// Reservations made in job_test whose job has not been seen running yet. slurmctld can still fail to start a
// job after its job_test said yes; such a reservation is given back at the next job_test of another job (by
// then the first job's select_nodes() is over: slurmctld tests one job at a time under its job write lock).
class UnconfirmedReservations {
 public:
  void Add(uint32_t job_id) { pending_.push_back(job_id); }
  // The job started (or ended): its reservation is no longer a candidate for release.
  void Confirm(uint32_t job_id);
  // Takes out and returns the jobs other than `current` for which `started` is false.
  std::vector<uint32_t> TakeStale(uint32_t current, const std::function<bool(uint32_t)>& started);
  void Clear() { pending_.clear(); }
  bool empty() const { return pending_.empty(); }

 private:
  std::vector<uint32_t> pending_;  // few: normally empty by the next job_test
};

class SlurmLedgerFace {
 public:
  // `error` is true for lines to log as errors, false for info.
  using Log = std::function<void(bool error, const std::string& line)>;
  struct Options {
    std::chrono::milliseconds shared_interval{1000};    // re-mirror the other owners this often
    std::chrono::milliseconds fallback_interval{2000};  // one attempt to reach the ledger this often
    std::string metrics_path;                           // empty: no metrics file
  };

  // Makes the link (in fallback until its first sync, which the thread starts at once) and starts the thread.
  // `topology` (built from `description`, which has a `ledger:` section) and `local` (the plugin's ledger)
  // must outlive the face; `mu` guards `local`. std::system_error if the thread cannot start.
  static absl::StatusOr<std::unique_ptr<SlurmLedgerFace>> Create(const Topology& topology,
                                                                 const v1::ClusterDescription& description,
                                                                 absl::string_view cluster_name, std::timed_mutex* mu,
                                                                 Ledger* local, Options options, Log log);
  ~SlurmLedgerFace();  // stops and joins the thread: do not hold `mu` (the thread never waits on it for long)
  SlurmLedgerFace(const SlurmLedgerFace&) = delete;
  SlurmLedgerFace& operator=(const SlurmLedgerFace&) = delete;

  // The rest under `mu`.
  // Reserves `allocation` (its id is the job id) through the shared ledger and commits it to `local`.
  // FailedPrecondition whose message names the shared power ledger when it, or in fallback the guaranteed
  // slice, refuses; `local` is unchanged then.
  absl::Status Reserve(const Allocation& allocation);
  // Releases job `local_id` from `local` and from the shared ledger (in fallback, by the next reconcile).
  void Release(const std::string& local_id);
  // Whether `id` in `local` is another owner's allocation mirrored from the shared ledger.
  bool IsMirrored(absl::string_view id) const;
  // The plugin has (re)built its whole list from job_list: the next sync reconciles it (the plugin's own
  // allocations in `local`) with the shared ledger, and comes at once. Until the first call the face does not sync
  // at all (after a restart, a partial list would release running jobs' reservations): it stays in fallback.
  void ReconcileSoon();
  // What a refusal's pending reason adds: fallback and why, or what of the other owners is counted.
  std::string ReasonNote() const;
  bool in_fallback() const;
  uint64_t fallbacks() const;
  const std::string& owner_prefix() const { return prefix_; }

  // One sync now (the thread's work; tests call it directly with `mu` held).
  void SyncLocked();

 private:
  SlurmLedgerFace(std::string prefix, std::timed_mutex* mu, Ledger* local, Options options, Log log);
  // One round of the thread: probe (in fallback), sync, metrics; returns the wait before the next.
  std::chrono::milliseconds Beat();
  void WriteMetrics();

  const std::string prefix_;
  std::timed_mutex* const mu_;
  Ledger* const local_;
  const Options options_;
  const Log log_;
  std::unique_ptr<ledger::LedgerLink> link_;
  bool reconcile_due_ = true;  // under mu_
  bool list_ready_ = false;    // under mu_: the plugin has built its list (ReconcileSoon)

  std::string metrics_written_;             // the thread's own
  bool unreachable_logged_ = false;         // the thread's own: "unreachable since the start" said once
  std::atomic<bool> stopping_{false};       // set before the thread is stopped: a beat waiting on mu_ gives up
  std::unique_ptr<PeriodicThread> thread_;  // last: started once everything above is initialised
};

}  // namespace rackwise::slurm
