// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: preemption (job_preemption.h).
#include "job_preemption.h"

#include <cinttypes>
#include <ctime>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rackwise/preemption.h"
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

namespace rackwise::slurm {

std::optional<std::string> JobPreemption::WaitingForVictimsLocked(uint32_t job_id, const Ledger& ledger) {
  auto it = preempting_.find(job_id);
  if (it == preempting_.end()) return std::nullopt;
  std::vector<std::string> still;
  for (const std::string& id : it->second) {
    if (ledger.Find(id)) still.push_back(id);
  }
  if (still.empty()) {
    preempting_.erase(it);
    return std::nullopt;
  }
  return absl::StrCat("waiting for preempted job", still.size() == 1 ? " " : "s ", absl::StrJoin(still, ","),
                      " to give back their GPUs and power");
}

std::optional<std::string> JobPreemption::PreemptForLocked(const job_record_t* job, const PlacementRequest& request,
                                                           const ClusterModel& model, bitstr_t* bitmap,
                                                           uint32_t min_nodes, uint32_t max_nodes,
                                                           SlurmList preemptee_candidates,
                                                           SlurmList* preemptee_job_list, FitTest fit) {
  if (!preemptee_candidates || !preemptee_job_list || list_count(preemptee_candidates) == 0) return std::nullopt;
  // The candidates as the core sees them: running jobs it holds, with the work each would lose (requeue and
  // cancel lose everything run so far; its GPUs times the hours since it started).
  const time_t now = time(nullptr);
  std::vector<PreemptionCandidate> candidates;
  absl::flat_hash_map<std::string, job_record_t*> by_id;
  SlurmListIterator it = list_iterator_create(preemptee_candidates);
  while (job_record_t* victim = static_cast<job_record_t*>(list_next(it))) {
    if (!IS_JOB_RUNNING(victim)) continue;
    std::string id = JobId(victim);
    const Allocation* held = model.ledger().Find(id);
    if (!held || by_id.contains(id)) continue;
    const double hours = victim->start_time > 0 && now > victim->start_time ? (now - victim->start_time) / 3600.0 : 0;
    candidates.push_back({id, static_cast<int64_t>(victim->priority), held->gpu_count() * hours});
    by_id.emplace(std::move(id), victim);
  }
  list_iterator_destroy(it);
  if (candidates.empty()) return std::nullopt;
  absl::StatusOr<std::optional<PreemptionPlan>> plan = PlanPreemption(model.ledger(), request, candidates);
  if (!plan.ok()) {
    info("rackwise: JobId=%u: no preemption plan: %s", job->job_id, std::string(plan.status().message()).c_str());
    return std::nullopt;
  }
  if (!*plan || (*plan)->victims.empty()) return std::nullopt;
  const PreemptionPlan& p = **plan;
  // cons_tres must agree the job fits on the planned nodes once the victims are gone (cores, memory, GRES).
  const int size = bit_size(bitmap);
  bitstr_t* planned = bit_alloc(size);
  for (const NodeGpus& ng : p.decision.nodes) {
    const int i = model.ToSlurm(ng.node);
    if (i >= 0 && i < size && bit_test(bitmap, i)) bit_set(planned, i);
  }
  SlurmList victims = list_create(nullptr);  // slurmctld frees the list, not the jobs
  for (const std::string& id : p.victims) list_append(victims, by_id.at(id));
  const uint32_t k = static_cast<uint32_t>(p.decision.nodes.size());
  const uint32_t nodes = k >= min_nodes && k <= max_nodes ? k : min_nodes;
  SlurmList picked = nullptr;
  const int rc = fit(planned, nodes, victims, &picked);
  FREE_NULL_LIST(picked);
  if (rc != SLURM_SUCCESS || bit_set_count(planned) != static_cast<int>(k)) {
    debug("rackwise: JobId=%u: cons_tres does not fit the preemption plan's %u nodes", job->job_id, k);
    FREE_NULL_LIST(victims);
    FREE_NULL_BITMAP(planned);
    return std::nullopt;
  }
  // Slurm preempts what this list names: every victim of the plan, since each frees GPUs or power the plan
  // counts on, even where cons_tres would not have needed its cores.
  FREE_NULL_LIST(*preemptee_job_list);
  *preemptee_job_list = victims;
  bit_copybits(bitmap, planned);
  FREE_NULL_BITMAP(planned);
  if (preempting_.size() >= kMaxWaiting) preempting_.clear();
  preempting_[job->job_id] = p.victims;
  info("rackwise: JobId=%u preempts JobId %s (%.2f GPU-hours lost) to start in %d NVLink domains", job->job_id,
       absl::StrJoin(p.victims, ",").c_str(), p.lost_gpu_hours, p.decision.domains);
  return absl::StrCat("preempting job", p.victims.size() == 1 ? " " : "s ", absl::StrJoin(p.victims, ","),
                      " to start in ", p.decision.domains, " NVLink domain", p.decision.domains == 1 ? "" : "s");
}

}  // namespace rackwise::slurm
