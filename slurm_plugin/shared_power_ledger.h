// SPDX-License-Identifier: GPL-2.0-or-later
// The shared power ledger as select/rackwise_cons_tres uses it, when rackwise.yaml has a `ledger:` section.
// Owners are "slurm/<ClusterName>/<jobid>". A job's GPUs are reserved through the ledger in job_test (RUN_NOW),
// once cons_tres has picked what Slurm will run, and released at job end; a reservation whose job slurmctld then
// did not start is given back at the next job_test. After every rebuild of the plugin's ledger from job_list
// (start, restart, reconfigure) the face reconciles the whole slurm/<ClusterName>/ list with the ledger, and again
// on the ledger's return after a fallback (slurm_ledger_face.h). Round trips on the decision path: one Reserve per
// started job and one Release per ended job while the ledger answers; none in fallback.
//
// It holds the face (null without a `ledger:` section), the reservations not yet seen running, and why a
// `ledger:` section cannot be used (GPU jobs are held then, rather than placed on the whole described budget).
//
// Thread safety: every call is made under the select plugin's mutex (`mu`, given to ConfigureLocked), which guards
// this object, the plugin's ledger and the face's state. The face's own thread takes that mutex for each sync, in
// bounded slices; Reset and the destructor stop and join it, so they may wait up to one slice while the caller
// holds the mutex (as the plugin always did when replacing its model).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "cluster_model.h"
#include "rackwise/allocation.h"
#include "rackwise/ledger.h"
#include "slurm_ledger_face.h"

namespace rackwise::slurm {

class SharedPowerLedger {
 public:
  // Drops the face (before the model it points at is replaced; its thread stops within a lock slice) and the
  // reservations awaiting their job's start.
  void Reset();
  // From the loaded description's text `yaml` (from `path`), after Reset: makes the face over `model`'s topology and
  // ledger when there is a `ledger:` section, or records why it cannot (error()). `mu` guards `model`'s ledger.
  void ConfigureLocked(const std::string& yaml, const std::string& path, ClusterModel* model, std::timed_mutex* mu);

  // Whether there is a shared ledger to reserve through.
  bool active() const { return face_ != nullptr; }
  // Non-empty: a `ledger:` section the plugin cannot use; GPU jobs are held with this reason.
  const std::string& error() const { return error_; }

  // Reserves `allocation` (job `job_id`'s GPUs, as counted) through the shared ledger; only while active(). False,
  // with `why`, when the ledger (or, in fallback, the guaranteed slice) refuses.
  bool ReserveLocked(uint32_t job_id, const Allocation& allocation, std::string* why);
  // Gives back the reservations of jobs that slurmctld did not start after their job_test (other than `current`).
  void SweepUnconfirmedLocked(uint32_t current, Ledger* local);
  // Releases job `id` from the shared ledger (and with it from `local`); without one, from `local`.
  void ReleaseLocked(const std::string& id, Ledger* local);
  // Job `job_id` was seen running, or is gone: its reservation is no longer a candidate for release.
  void ConfirmLocked(uint32_t job_id) { unconfirmed_.Confirm(job_id); }
  // The plugin's ledger is rebuilt from job_list: no reservation awaits its job any more.
  void ForgetUnconfirmedLocked() { unconfirmed_.Clear(); }
  // Whether `id` in the plugin's ledger is another owner's allocation mirrored from the shared ledger.
  bool IsMirroredLocked(const std::string& id) const { return face_ && face_->IsMirrored(id); }
  // The plugin's list is whole again (or differs from what was reserved): the shared ledger is brought in line.
  void ReconcileSoonLocked() {
    if (face_) face_->ReconcileSoon();
  }
  // What a refusal's pending reason says of the shared ledger (empty without one).
  std::string NoteLocked() const { return face_ ? face_->ReasonNote() : ""; }

 private:
  std::unique_ptr<SlurmLedgerFace> face_;  // points at the model's topology and ledger
  UnconfirmedReservations unconfirmed_;    // reserved in job_test, not yet seen running
  std::string error_;
};

}  // namespace rackwise::slurm
