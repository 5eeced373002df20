// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: preemption. When slurmctld offers preemptee candidates (its preempt
// plugin found running jobs this one may displace) and the core refuses the job as things are, the core chooses
// the victims (PlanPreemption: the job in its fewest NVLink domains, every cap less the reserve held once they are
// gone, the fewest GPU-hours lost); cons_tres is asked to fit the job on the planned nodes with only those jobs as
// candidates, and slurmctld is told to preempt exactly them. The job starts in a later pass, once they have
// released their GPUs and power: until then it waits, and no further victims are chosen for it.
#include <cinttypes>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gpu_selection.h"
#include "rackwise/preemption.h"
#include "rackwise_select.h"
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

namespace rackwise::slurm {

bool RackwiseSelect::WaitsForVictimsLocked(job_record_t* job) {
  auto it = preempting_.find(job->job_id);
  if (it == preempting_.end()) return false;
  std::vector<std::string> still;
  for (const std::string& id : it->second) {
    if (model_->ledger().Find(id)) still.push_back(id);
  }
  if (still.empty()) {
    preempting_.erase(it);
    return false;
  }
  SetPendingReason(job, absl::StrCat("waiting for preempted job", still.size() == 1 ? " " : "s ",
                                     absl::StrJoin(still, ","), " to give back their GPUs and power"));
  return true;
}

int RackwiseSelect::PreemptForLocked(job_record_t* job, const PlacementRequest& request, bitstr_t* bitmap,
                                     uint32_t min_nodes, uint32_t max_nodes, uint16_t mode,
                                     SlurmList preemptee_candidates, SlurmList* preemptee_job_list,
                                     const JobTestTail& tail) {
  if (!preemptee_candidates || !preemptee_job_list || list_count(preemptee_candidates) == 0) return SLURM_ERROR;
  // The candidates as the core sees them: running jobs it holds, with the work each would lose (requeue and
  // cancel lose everything run so far; its GPUs times the hours since it started).
  const time_t now = time(nullptr);
  std::vector<PreemptionCandidate> candidates;
  absl::flat_hash_map<std::string, job_record_t*> by_id;
  SlurmListIterator it = list_iterator_create(preemptee_candidates);
  while (job_record_t* victim = static_cast<job_record_t*>(list_next(it))) {
    if (!IS_JOB_RUNNING(victim)) continue;
    std::string id = JobId(victim);
    const Allocation* held = model_->ledger().Find(id);
    if (!held || by_id.contains(id)) continue;
    const double hours = victim->start_time > 0 && now > victim->start_time ? (now - victim->start_time) / 3600.0 : 0;
    candidates.push_back({id, static_cast<int64_t>(victim->priority), held->gpu_count() * hours});
    by_id.emplace(std::move(id), victim);
  }
  list_iterator_destroy(it);
  if (candidates.empty()) return SLURM_ERROR;
  absl::StatusOr<std::optional<PreemptionPlan>> plan = PlanPreemption(model_->ledger(), request, candidates);
  if (!plan.ok()) {
    info("rackwise: JobId=%u: no preemption plan: %s", job->job_id, std::string(plan.status().message()).c_str());
    return SLURM_ERROR;
  }
  if (!*plan || (*plan)->victims.empty()) return SLURM_ERROR;
  const PreemptionPlan& p = **plan;
  // cons_tres must agree the job fits on the planned nodes once the victims are gone (cores, memory, GRES).
  const int size = bit_size(bitmap);
  bitstr_t* planned = bit_alloc(size);
  for (const NodeGpus& ng : p.decision.nodes) {
    const int i = model_->ToSlurm(ng.node);
    if (i >= 0 && i < size && bit_test(bitmap, i)) bit_set(planned, i);
  }
  SlurmList victims = list_create(nullptr);  // slurmctld frees the list, not the jobs
  for (const std::string& id : p.victims) list_append(victims, by_id.at(id));
  const uint32_t k = static_cast<uint32_t>(p.decision.nodes.size());
  const uint32_t nodes = k >= min_nodes && k <= max_nodes ? k : min_nodes;
  ClearGpuSelection(job, gpu_plugin_id_);
  SlurmList picked = nullptr;
  const int rc = InnerTest(job, planned, nodes, max_nodes, nodes, mode, victims, &picked, tail);
  FREE_NULL_LIST(picked);
  if (rc != SLURM_SUCCESS || bit_set_count(planned) != static_cast<int>(k)) {
    debug("rackwise: JobId=%u: cons_tres does not fit the preemption plan's %u nodes", job->job_id, k);
    FREE_NULL_LIST(victims);
    FREE_NULL_BITMAP(planned);
    return SLURM_ERROR;
  }
  // Slurm preempts what this list names: every victim of the plan, since each frees GPUs or power the plan
  // counts on, even where cons_tres would not have needed its cores.
  FREE_NULL_LIST(*preemptee_job_list);
  *preemptee_job_list = victims;
  bit_copybits(bitmap, planned);
  FREE_NULL_BITMAP(planned);
  if (preempting_.size() >= kMaxApprovals) preempting_.clear();  // only jobs cancelled while waiting pile up
  preempting_[job->job_id] = p.victims;
  info("rackwise: JobId=%u preempts JobId %s (%.2f GPU-hours lost) to start in %d NVLink domains", job->job_id,
       absl::StrJoin(p.victims, ",").c_str(), p.lost_gpu_hours, p.decision.domains);
  SetPendingReason(
      job, absl::StrCat("preempting job", p.victims.size() == 1 ? " " : "s ", absl::StrJoin(p.victims, ","),
                        " to start in ", p.decision.domains, " NVLink domain", p.decision.domains == 1 ? "" : "s"));
  return SLURM_SUCCESS;
}

}  // namespace rackwise::slurm
