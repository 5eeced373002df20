// SPDX-License-Identifier: GPL-2.0-or-later
// The Slurm side of select/rackwise_cons_tres inside slurmctld: turns job records, node bitmaps and GRES
// bit selections into core requests and allocations, narrows cons_tres's candidate nodes to the core's
// decision, and keeps the core's power ledger in step with the jobs Slurm runs. No placement logic here:
// the Placer decides, the Ledger enforces; cons_tres keeps doing cores, memory and GRES bookkeeping.
//
// Its own members are job_test (rackwise_select.cc) and putting a description in force, node health and the
// ledger hooks (rackwise_select_ledger.cc). The rest is a class of its own, held here and called with what it needs:
// which description is in force (description_in_force.h), the GPU selection cons_tres made (gpu_selection.h),
// preemption (job_preemption.h), the shared power ledger (shared_power_ledger.h), measured power and the answer to
// an overdraw (measured_power.h), publishing the ledger and the steered limits (ledger_publisher.h).
//
// Thread safety: slurmctld calls the select plugin under its own locks; a mutex (mu_) guards against the few
// entry points (reconfigure from an RPC thread) that hold different ones, and against the plugin's own threads
// (the state publisher, the shared ledger's sync), which never hold a slurmctld lock. mu_ guards every member and
// every piece above; their ...Locked methods are called with it held.
//
// With a `ledger:` section in rackwise.yaml, the plugin is a face of the shared power ledger
// (slurm_ledger_face.h): a job's GPUs are reserved there in job_test, once the allocation Slurm will run is known,
// and released at job end (shared_power_ledger.h).
#pragma once

#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "cluster_model.h"
#include "description_in_force.h"
#include "job_preemption.h"
#include "job_translation.h"
#include "ledger_publisher.h"
#include "measured_power.h"
#include "pending_reasons.h"
#include "rackwise/ledger.h"
#include "rackwise/oversubscribed_allocations.h"
#include "rackwise/placement_decision.h"
#include "rackwise/placement_request.h"
#include "rackwise/refusal_memo.h"
#include "requeue_guard.h"
#include "shared_power_ledger.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

namespace rackwise::slurm {

class RackwiseSelect {
 public:
  // `inner` is cons_tres's operations table; it must outlive this object.
  explicit RackwiseSelect(slurm_select_ops_t* inner) : inner_(inner) { reasons_.Start(); }
  // No destructor of its own: the publisher, the last member, goes first and stops its thread before the members
  // it reads go.
  RackwiseSelect(const RackwiseSelect&) = delete;
  RackwiseSelect& operator=(const RackwiseSelect&) = delete;

  // After the inner node_init (startup, restart and every reconfigure that rebuilds the node table). A
  // missing, invalid or disagreeing rackwise.yaml is logged with FILE:LINE and the description in force, or
  // the last accepted one saved in StateSaveLocation, stays in force; only with neither is it SLURM_ERROR
  // (slurmctld refuses to start, after our message).
  int NodeInit();
  // After the inner reconfigure: re-reads rackwise.yaml if it changed (keeping the old one if the new one is
  // bad), then rebuilds the ledger from job_list.
  void Reconfigure();

  int JobTest(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes,
              uint16_t mode, SlurmList preemptee_candidates, SlurmList* preemptee_job_list, const JobTestTail& tail);

  // Ledger hooks, keyed by job id and idempotent.
  void JobRunning(job_record_t* job);   // nodeinfo_set: a job started, or was recovered after a restart
  void JobGone(job_record_t* job);      // job_fini, or suspended with its resources released
  void JobFinished(job_record_t* job);  // job_fini: JobGone, and where it ran is remembered (requeue_guard.h)
  void JobChanged(job_record_t* job);   // resized, expanded, resumed

 private:
  // Compiles `text` against slurm.conf's nodes and puts it in force: the model, and everything drawn from it, is
  // replaced (the ledger is rebuilt by the caller). On error nothing changes. DescriptionInForce decides which text.
  absl::Status UseDescription(const std::string& text, const std::string& file);
  void RebuildLedgerLocked();
  void SyncHealthLocked();

  // For a `preferred` job the core may hold out (PreferredWantsEstimate): its time limit, and when its fewest NVLink
  // domains are expected free from the running jobs' end_time (their limits). The core's rule (PreferredHoldsOut, in
  // Placer::Place) decides.
  void EstimateFewestDomainsLocked(const job_record_t* job, PlacementRequest* request);
  // Whether any of `nodes` (empty: every described node) is completing: its job has ended, its epilog runs.
  bool AnyCompletingLocked(const std::vector<NodeId>& nodes) const;
  // The wait a `preferred` job expects for fewest domains that only completing nodes keep from it: an epilog
  // takes seconds, and each try re-decides.
  static constexpr double kCompletingNodeSeconds = 1.0;
  int JobTestLocked(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes,
                    uint16_t mode, SlurmList preemptee_candidates, SlurmList* preemptee_job_list,
                    const JobTestTail& tail);
  int InnerTest(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes,
                uint16_t mode, SlurmList preemptee_candidates, SlurmList* preemptee_job_list, const JobTestTail& tail);
  int RunNow(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes,
             uint16_t mode, SlurmList preemptee_candidates, SlurmList* preemptee_job_list, const JobTestTail& tail,
             const GpuAsk& ask);
  // RUN_NOW once the core decided: cons_tres is offered the core's fallback node sets for `decision`, most
  // preferred first, and the first pick admitted (AdmitLocked) is the job's.
  int PlaceAsDecidedLocked(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes,
                           uint32_t req_nodes, uint16_t mode, SlurmList preemptee_candidates,
                           SlurmList* preemptee_job_list, const JobTestTail& tail, const PlacementRequest& request,
                           const PlacementDecision& decision);
  // The final power check of what Slurm will really start (the GPUs cons_tres selected on `nodes`, as counted):
  // within the usable caps (the policy's reserve kept free), remembered for the judgement at the job's start, then
  // reserved through the shared ledger when there is one. False, with `why`, when a cap or the shared ledger (in
  // fallback, the guaranteed slice) refuses.
  bool AdmitLocked(const job_record_t* job, const bitstr_t* nodes, std::string* why);
  // policy.oversubscribe_pct: the core's CountOversubscribed with this face's telemetry state; `request` then asks
  // for the counted watts, and the job is remembered (declared and counted) until it is gone.
  void CountOversubscribedLocked(const job_record_t* job, PlacementRequest* request);
  // The GPUs `allocation` (a job's, per_gpu as it declares) counts: the counted watts when it was placed
  // oversubscribed.
  void CountAsPlacedLocked(Allocation* allocation) const {
    allocation->per_gpu = oversubscribed_.Counted(allocation->id, allocation->per_gpu);
  }
  // After a restart: the jobs counted oversubscribed, from the ledger slurmctld published last (once per process).
  void RestoreOversubscribedLocked();
  // Takes out of `bitmap` the nodes a requeued job left too recently for slurmd to run its prolog again
  // (requeue_guard.h). False, with the pending reason set, if the job cannot start now because of it.
  bool SkipNodesWithoutProlog(job_record_t* job, bitstr_t* bitmap);
  // Backfill plans a job's start with cons_tres's will-run test, which knows no NVLink domains: in a partition of
  // several node types it may plan a `required` job on nodes of a type that can never give it its fewest domains,
  // and reserve them for it, keeping other jobs off nodes the job will never take. Leaves in `bitmap` only the
  // nodes of the types that give them (Placer::FewestDomains) to `request`, made from `bitmap`.
  void KeepFewestTypesForWillRunLocked(const PlacementRequest& request, bitstr_t* bitmap);
  static int64_t PrologSkipWindow();  // from slurm.conf's AuthInfo and KillWait
  void SetPendingReason(job_record_t* job, const std::string& why);
  void CommitJobLocked(job_record_t* job, bool starting);
  // A job that started outside its placement over a usable cap (StartVerdict::kOutsidePlacement): logged, and
  // requeued so that the core places it again.
  void TakeOffOutsidePlacementLocked(const job_record_t* job, const absl::Status& why);
  // Releases job `id` from the ledger (and the shared ledger, if any).
  void ReleaseJobLocked(const std::string& id);

  slurm_select_ops_t* inner_;
  // When this plugin was loaded: a job that started before then was not placed by this process (JobRunning).
  const time_t loaded_at_ = time(nullptr);
  std::timed_mutex mu_;  // timed: the shared ledger's thread waits on it in bounded slices
  std::unique_ptr<ClusterModel> model_;
  DescriptionInForce description_;  // which rackwise.yaml text model_ was built from
  std::vector<NodeHealth> health_cache_;
  // Every node's state is read again only when slurmctld's last_node_update says a node record changed, and at
  // least every kHealthResyncSeconds (not every path that marks a node unresponsive stamps last_node_update).
  static constexpr time_t kHealthResyncSeconds = 1;
  time_t synced_node_update_ = -1;  // last_node_update at the last full read
  time_t synced_at_ = 0;            // when that read was (0: read at the next decision)
  // The described nodes the ledger holds up, as Slurm node indices (MakeRequest's `every_usable`); rebuilt when
  // a node's health changes.
  struct FreeBitmap {
    void operator()(bitstr_t* b) const { FREE_NULL_BITMAP(b); }
  };
  std::unique_ptr<bitstr_t, FreeBitmap> usable_nodes_;
  // Job ids that fit the empty, healthy cluster, with the locality each asked (its will-run test is narrowed
  // when `required`); until the description changes or the job is gone.
  absl::flat_hash_map<uint32_t, Locality> statically_feasible_;
  // Each pending job's last refusal, kept while neither the ledger nor what the job asks has changed: slurmctld
  // tries every pending job on every pass, and a pass where nothing ended then costs a lookup per job.
  RefusalMemo refusals_;
  uint32_t gpu_plugin_id_ = 0;
  PendingReasons reasons_;
  RecentDepartures departures_;
  // job id -> the GPUs its last RUN_NOW test let through (AdmitLocked); judged against what starts (CommitJobLocked)
  absl::flat_hash_map<uint32_t, Allocation> approved_;
  JobPreemption preemption_;  // the jobs waiting for the jobs preempted for them
  static constexpr size_t kMaxApprovals = 100000;
  int64_t inner_ns_ = 0;  // time spent in cons_tres during the current job_test (debug2 log)
  int inner_calls_ = 0;
  // The shared power ledger (inactive without a `ledger:` section); its face points at model_'s topology and ledger.
  SharedPowerLedger shared_;
  // Jobs counted at less than they declare (policy.oversubscribe_pct), saved in the published ledger.
  OversubscribedAllocations oversubscribed_;
  bool oversubscribed_restored_ = false;  // read back from the published ledger (the first rebuild only)
  std::string oversubscription_off_;      // the last reason it was not applied (logged once in a row)
  MeasuredPower power_;                   // the telemetry, the requeue thread, when each job started
  // The live ledger as a state file in StateSaveLocation, and the steered GPU limits beside it. Last: its thread
  // reads the members above (model_, power_ and oversubscribed_, under mu_), and telemetry's poller wakes it; its
  // destructor, run first, unhooks the wake-up and stops the thread before any of them goes.
  LedgerPublisher publisher_{&mu_, &model_, &power_, &oversubscribed_};
};

}  // namespace rackwise::slurm
