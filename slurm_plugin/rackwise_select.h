// SPDX-License-Identifier: GPL-2.0-or-later
// The Slurm side of select/rackwise_cons_tres inside slurmctld: turns job records, node bitmaps and GRES
// bit selections into core requests and allocations, narrows cons_tres's candidate nodes to the core's
// decision, and keeps the core's power ledger in step with the jobs Slurm runs. No placement logic here:
// the Placer decides, the Ledger enforces; cons_tres keeps doing cores, memory and GRES bookkeeping.
//
// Thread safety: slurmctld calls the select plugin under its own locks; a mutex guards against the few
// entry points (reconfigure from an RPC thread) that hold different ones.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "cluster_model.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_decision.h"
#include "rackwise/placement_request.h"
#include "slurm_telemetry.h"
#include "slurm_headers.h"

namespace rackwise::slurm {

class RackwiseSelect {
 public:
  // `inner` is cons_tres's operations table; it must outlive this object.
  explicit RackwiseSelect(slurm_select_ops_t* inner) : inner_(inner) {}

  // After the inner node_init (startup and every reconfigure that rebuilds the node table). At the first call
  // a missing, invalid or disagreeing rackwise.yaml is SLURM_ERROR (slurmctld refuses to start, after our
  // message); later a bad file keeps the previous description and logs why.
  int NodeInit();
  // After the inner reconfigure: re-reads rackwise.yaml if it changed (keeping the old one if the new one is
  // bad), then rebuilds the ledger from job_list.
  void Reconfigure();

  int JobTest(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes,
              uint16_t mode, List preemptee_candidates, List* preemptee_job_list, bitstr_t* exc_core_bitmap);

  // Ledger hooks, keyed by job id and idempotent.
  void JobRunning(job_record_t* job);  // nodeinfo_set: a job started, or was recovered after a restart
  void JobGone(job_record_t* job);     // job_fini, or suspended with its resources released
  void JobChanged(job_record_t* job);  // resized, expanded, resumed

 private:
  struct GpuAsk {
    int gpus = 0;
    int gpus_per_node = 0;
    bool translated = true;  // false: a form the core does not model (gpus per socket); cons_tres decides,
                             // the ledger still checks power
  };

  std::string DescriptionPath() const;
  std::vector<SlurmNode> SlurmNodes() const;
  absl::Status LoadModel(bool keep_old_on_error);
  void RebuildLedgerLocked();
  void SyncHealthLocked();

  GpuAsk ReadGpuAsk(const job_record_t* job) const;
  PlacementRequest MakeRequest(const job_record_t* job, const GpuAsk& ask, const bitstr_t* bitmap) const;
  Milliwatts JobWatts(const job_record_t* job) const;
  // The GPUs a job holds (after allocation) or would hold (after a RUN_NOW job_test), as an Allocation.
  std::optional<Allocation> AllocatedGpus(const job_record_t* job) const;
  std::optional<Allocation> SelectedGpus(const job_record_t* job, const bitstr_t* nodes) const;
  // Pins the job's GPUs to the indices the core chose (rail alignment), where cons_tres agrees on the count
  // and Slurm's own node state has those indices free.
  void ApplyGpuIndices(job_record_t* job, const PlacementDecision& decision) const;
  // Drops every per-node GPU pick of the job's request (ours or a previous try's) before cons_tres runs.
  void ClearGpuSelection(job_record_t* job) const;
  int JobTestLocked(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes,
                    uint16_t mode, List preemptee_candidates, List* preemptee_job_list, bitstr_t* exc_core_bitmap);
  int InnerTest(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes,
                uint16_t mode, List preemptee_candidates, List* preemptee_job_list, bitstr_t* exc_core_bitmap);
  int RunNow(job_record_t* job, bitstr_t* bitmap, uint32_t min_nodes, uint32_t max_nodes, uint32_t req_nodes,
             uint16_t mode, List preemptee_candidates, List* preemptee_job_list, bitstr_t* exc_core_bitmap,
             const GpuAsk& ask);
  bool PowerFits(const job_record_t* job, const bitstr_t* nodes, std::string* why);
  void SetPendingReason(job_record_t* job, const std::string& why) const;
  void CommitJobLocked(job_record_t* job, bool starting);
  // Measured power (rackwise_select_telemetry.cc): (re)configures polling from the loaded description's text,
  // and applies the readings parked since the last decision, logging what changed.
  void ConfigureTelemetryLocked(const std::string& yaml, const std::string& path);
  void ApplyTelemetryLocked();

  slurm_select_ops_t* inner_;
  std::mutex mu_;
  std::unique_ptr<ClusterModel> model_;
  std::string loaded_text_;  // the file content the model was built from, to skip unchanged reloads
  std::string mismatch_;     // non-empty: slurm.conf changed under a description that no longer fits
  std::vector<NodeHealth> health_cache_;
  absl::flat_hash_set<uint32_t> statically_feasible_;  // job ids that fit the empty, healthy cluster
  uint32_t gpu_plugin_id_ = 0;
  int64_t inner_ns_ = 0;  // time spent in cons_tres during the current job_test (debug2 log)
  int inner_calls_ = 0;
  SlurmTelemetry telemetry_;
};

}  // namespace rackwise::slurm
