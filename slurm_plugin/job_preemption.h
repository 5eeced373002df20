// SPDX-License-Identifier: GPL-2.0-or-later
// Preemption for select/rackwise_cons_tres. When slurmctld offers preemptee candidates (its preempt plugin found
// running jobs this one may displace) and the core refuses the job as things are, the core chooses the victims
// (PlanPreemption: the job in its fewest NVLink domains, every cap less the reserve held once they are gone, the
// fewest GPU-hours lost); cons_tres is asked to fit the job on the planned nodes with only those jobs as
// candidates, and slurmctld is told to preempt exactly them. The job starts in a later pass, once they have
// released their GPUs and power: until then it waits, and no further victims are chosen for it.
//
// Thread safety: none of its own. Every call is made under the select plugin's mutex (the ...Locked names), from
// job_test or a ledger hook, which is what guards the jobs waiting for their victims; the ledger and model passed
// in are guarded by the same mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "cluster_model.h"
#include "rackwise/ledger.h"
#include "rackwise/placement_request.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

namespace rackwise::slurm {

class JobPreemption {
 public:
  // cons_tres's job_test of the job on exactly `nodes` (`node_count` of them, as the minimum and requested count),
  // with only `victims` as preemptee candidates; `picked` receives cons_tres's own preemptee list (freed by the
  // caller). Returns cons_tres's code.
  using FitTest = absl::FunctionRef<int(bitstr_t* nodes, uint32_t node_count, SlurmList victims, SlurmList* picked)>;

  // The pending reason of job `job_id` while the jobs preempted for it still hold GPUs or power in `ledger`: no
  // further victims are chosen for it meanwhile. nullopt: it waits for none (any more).
  std::optional<std::string> WaitingForVictimsLocked(uint32_t job_id, const Ledger& ledger);
  // For a job the core refuses as things are (`request`, made from `bitmap`): the core's victims among slurmctld's
  // candidates, cons_tres fitted (`fit`) on the planned nodes, `bitmap` narrowed to them and *preemptee_job_list set
  // to exactly the victims; slurmctld then preempts them and the job waits. Returns the job's pending reason then;
  // nullopt (nothing changed): no plan.
  std::optional<std::string> PreemptForLocked(const job_record_t* job, const PlacementRequest& request,
                                              const ClusterModel& model, bitstr_t* bitmap, uint32_t min_nodes,
                                              uint32_t max_nodes, SlurmList preemptee_candidates,
                                              SlurmList* preemptee_job_list, FitTest fit);
  // The job is gone: it waits for nothing.
  void ForgetLocked(uint32_t job_id) { preempting_.erase(job_id); }

 private:
  static constexpr size_t kMaxWaiting = 100000;  // only jobs cancelled while waiting pile up
  // job id -> the allocation ids of the jobs preempted for it, until they have left the ledger
  absl::flat_hash_map<uint32_t, std::vector<std::string>> preempting_;
};

}  // namespace rackwise::slurm
