// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: putting a description in force (which one:
// description_in_force.h), node health, and the ledger hooks that charge and release the GPUs Slurm actually
// gave each job.
#include <algorithm>
#include <ctime>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "plugin_files.h"
#include "published_ledger.h"
#include "rackwise/shadow_time.h"
#include "rackwise/start_guard.h"
#include "rackwise_select.h"
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

// job_list lives in the slurmctld binary; the plugin is also loaded by clients, where it does not exist.
// A weak reference resolves to slurmctld's list there and to nullptr elsewhere (we only use it in slurmctld).
extern "C" {
extern rackwise::slurm::SlurmList job_list __attribute__((weak));
}

namespace rackwise::slurm {

absl::Status RackwiseSelect::UseDescription(const std::string& text, const std::string& file) {
  absl::StatusOr<std::unique_ptr<ClusterModel>> model = ClusterModel::FromYaml(text, file, SlurmNodes());
  if (!model.ok()) return model.status();
  shared_.Reset();  // it points at the model being replaced (its thread stops within a lock slice)
  model_ = *std::move(model);
  statically_feasible_.clear();
  health_cache_.assign(model_->topology().nodes().size(), NodeHealth::kUp);
  synced_at_ = 0;  // a new ledger: read every node's health at the next decision
  usable_nodes_.reset();
  power_.ConfigureLocked(text, file);
  shared_.ConfigureLocked(text, file, model_.get(), &mu_);
  info("rackwise: loaded %s: %zu nodes, %zu NVLink domains, %zu racks, %zu power domains", file.c_str(),
       model_->topology().nodes().size(), model_->topology().domains().size(), model_->topology().racks().size(),
       model_->topology().power_domains().size());
  return absl::OkStatus();
}

int RackwiseSelect::NodeInit() {
  std::lock_guard lock(mu_);
  gpu_plugin_id_ = gres_build_id(const_cast<char*>("gpu"));
  const auto use = [this](const std::string& text, const std::string& file) { return UseDescription(text, file); };
  switch (description_.StartLocked(/*have_model=*/model_ != nullptr, use)) {
    case DescriptionInForce::Start::kInForce:
      RebuildLedgerLocked();
      publisher_.StartLocked();
      return SLURM_SUCCESS;
    case DescriptionInForce::Start::kHolding:  // the caps stay, nothing new is placed until a description fits
      return SLURM_SUCCESS;
    case DescriptionInForce::Start::kRefused: break;
  }
  return SLURM_ERROR;
}

void RackwiseSelect::Reconfigure() {
  std::lock_guard lock(mu_);
  if (!model_) return;
  absl::Status status = description_.ReloadLocked(
      [this](const std::string& text, const std::string& file) { return UseDescription(text, file); });
  if (!status.ok()) {
    error("rackwise: rejected the cluster description, keeping the one in force: %s",
          std::string(status.message()).c_str());
  }
  RebuildLedgerLocked();
  publisher_.StartLocked();  // a new telemetry interval sets the publishing interval
}

void RackwiseSelect::RebuildLedgerLocked() {
  if (!model_) return;
  // Caps and health come from the description and Slurm; allocations from the running jobs (the other owners'
  // mirrored from the shared ledger stay: its face refreshes them).
  for (const Allocation* a : model_->ledger().Allocations()) {
    const std::string id = a->id;
    if (shared_.IsMirroredLocked(id)) continue;
    model_->ledger().Release(id);
  }
  power_.ForgetStartsLocked();
  shared_.ForgetUnconfirmedLocked();
  SyncHealthLocked();
  // The first rebuild of a process reads the book back; slurmctld may not have loaded its jobs yet then (they come
  // through JobRunning), so only later rebuilds drop what is not running.
  const bool restoring = !oversubscribed_restored_;
  RestoreOversubscribedLocked();
  if (!&job_list || !job_list) return;
  SlurmListIterator it = list_iterator_create(job_list);
  int recovered = 0;
  absl::flat_hash_set<std::string> running;
  while (job_record_t* job = static_cast<job_record_t*>(list_next(it))) {
    if (IS_JOB_RUNNING(job) || IS_JOB_SUSPENDED(job)) {
      CommitJobLocked(job, /*starting=*/false);
      running.insert(JobId(job));
      ++recovered;
    }
  }
  list_iterator_destroy(it);
  // A job counted oversubscribed that is not running any more (placed but never started, pending since a requeue)
  // counts afresh when it is placed again.
  if (!restoring) oversubscribed_.Retain([&](const std::string& id) { return running.contains(id); });
  // Every job just recommitted was already running (and drawing) when the last reading was taken: none of them is
  // "placed since the reading", which the ledger would count on top of it (and steering would take for an
  // overdraw, cutting every job to its floor for a round after each reconfigure).
  Ledger& ledger = model_->ledger();
  std::vector<std::optional<Milliwatts>> readings;
  for (RackId r = 0; r < static_cast<RackId>(model_->topology().racks().size()); ++r)
    readings.push_back(ledger.measured_rack_draw(r));
  ledger.SetMeasuredDraw(readings, ledger.reclaim_fraction(), /*count_recent=*/false);
  debug("rackwise: ledger rebuilt from %d running jobs, %zu hold GPUs", recovered, model_->ledger().allocation_count());
  // The whole slurm/<ClusterName>/ list is now known: the shared ledger is made to hold exactly it.
  shared_.ReconcileSoonLocked();
}

void RackwiseSelect::RestoreOversubscribedLocked() {
  if (oversubscribed_restored_ || !model_) return;
  oversubscribed_restored_ = true;
  const std::string path = StateSavePath(kPublishedLedgerFileName);
  if (path.empty()) return;
  absl::StatusOr<OversubscribedAllocations> read = ReadOversubscribedJobs(path, description_.text(), DescriptionPath());
  if (read.status().code() == absl::StatusCode::kNotFound) return;  // the first start
  if (!read.ok()) {
    // The jobs counted oversubscribed before now count what they declared: the safe side, logged.
    error("rackwise: %s: not read back (%s): running jobs count the watts they declared", path.c_str(),
          std::string(read.status().message()).c_str());
    return;
  }
  oversubscribed_ = *std::move(read);
  if (oversubscribed_.size() > 0)
    info("rackwise: %zu jobs counted oversubscribed, read back from %s", oversubscribed_.size(), path.c_str());
}

void RackwiseSelect::EstimateFewestDomainsLocked(const job_record_t* job, PlacementRequest* request) {
  const PlacementPolicy& policy = model_->topology().policy();
  if (!PreferredWantsEstimate(policy, request->locality.value_or(policy.default_locality), request->waited_seconds))
    return;
  if (job->time_limit != NO_VAL && job->time_limit != INFINITE) request->time_limit_seconds = job->time_limit * 60.0;
  if (!&job_list || !job_list) return;
  const time_t now = time(nullptr);
  std::vector<ExpectedEnd> ends;
  SlurmListIterator it = list_iterator_create(job_list);
  while (const job_record_t* running = static_cast<job_record_t*>(list_next(it))) {
    if (!IS_JOB_RUNNING(running) || running->end_time <= 0) continue;
    std::string id = JobId(running);
    if (!model_->ledger().Find(id)) continue;
    ends.push_back({std::move(id), static_cast<double>(std::max<time_t>(0, running->end_time - now))});
  }
  list_iterator_destroy(it);
  std::sort(ends.begin(), ends.end(),
            [](const ExpectedEnd& a, const ExpectedEnd& b) { return a.in_seconds < b.in_seconds; });
  long long free = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(model_->topology().nodes().size()); ++n)
    free += model_->ledger().free_gpu_count(n);
  // Slurm offers only the nodes usable now; the wait is about every node the job may use, busy ones included.
  std::optional<std::vector<NodeId>> nodes = NodesToWaitFor(job, *request, *model_);
  if (!nodes) return;
  PlacementRequest whole = *request;
  whole.allowed_nodes = *std::move(nodes);
  absl::StatusOr<std::optional<double>> in = FewestDomainsIn(model_->ledger(), whole, ends, free);
  if (!in.ok() || !*in) return;
  if (**in > 0) {
    request->fewest_domains_in_seconds = **in;
    return;
  }
  // "Free now" in the ledger, yet not offered: a job that ended a moment ago leaves its nodes completing (its
  // epilog runs) and slurmctld offers them only after that, seconds later, while the ledger let them go at
  // job_fini. Spreading in that gap would take a 20-GPU job over two racks with a whole one about to be free; so
  // the expected wait is those seconds, and the next try decides again. Nodes held back for anything else (CPUs,
  // memory, a reservation) give no estimate: no reason to wait for them.
  if (AnyCompletingLocked(whole.allowed_nodes)) request->fewest_domains_in_seconds = kCompletingNodeSeconds;
}

bool RackwiseSelect::AnyCompletingLocked(const std::vector<NodeId>& nodes) const {
  const auto completing = [&](NodeId n) {
    const int i = model_->ToSlurm(n);
    return i >= 0 && i < node_record_count && node_record_table_ptr[i] && IS_NODE_COMPLETING(node_record_table_ptr[i]);
  };
  if (!nodes.empty()) return std::any_of(nodes.begin(), nodes.end(), completing);
  for (NodeId n = 0; n < static_cast<NodeId>(model_->topology().nodes().size()); ++n) {
    if (completing(n)) return true;
  }
  return false;
}

void RackwiseSelect::SyncHealthLocked() {
  // A change stamped in the second of the last read may have come after it: a read that ends in the second of
  // the last stamp is repeated next time.
  const time_t now = time(nullptr);
  if (last_node_update == synced_node_update_ && synced_node_update_ < synced_at_ && now >= synced_at_ &&
      now - synced_at_ < kHealthResyncSeconds && usable_nodes_ && bit_size(usable_nodes_.get()) == node_record_count) {
    return;
  }
  synced_node_update_ = last_node_update;
  synced_at_ = now;
  bool changed = !usable_nodes_ || bit_size(usable_nodes_.get()) != node_record_count;
  for (NodeId n = 0; n < static_cast<NodeId>(model_->topology().nodes().size()); ++n) {
    const int i = model_->ToSlurm(n);
    const node_record_t* node = (i >= 0 && i < node_record_count) ? node_record_table_ptr[i] : nullptr;
    const NodeHealth health = node ? HealthOf(node) : NodeHealth::kDown;
    if (health != health_cache_[n]) {
      model_->ledger().SetNodeHealth(n, health);
      health_cache_[n] = health;
      changed = true;
    }
  }
  if (!changed) return;
  usable_nodes_.reset(bit_alloc(std::max(node_record_count, 1)));
  for (NodeId n = 0; n < static_cast<NodeId>(model_->topology().nodes().size()); ++n) {
    const int i = model_->ToSlurm(n);
    if (i >= 0 && i < node_record_count && health_cache_[n] == NodeHealth::kUp) bit_set(usable_nodes_.get(), i);
  }
}

void RackwiseSelect::CommitJobLocked(job_record_t* job, bool starting) {
  shared_.ConfirmLocked(job->job_id);
  std::optional<Allocation> allocation = AllocatedGpus(job, *model_, gpu_plugin_id_);
  if (!allocation) return;
  CountAsPlacedLocked(&*allocation);
  refusals_.Forget(allocation->id);
  power_.StartedLocked(allocation->id, static_cast<int64_t>(job->start_time));
  const Allocation* held = model_->ledger().Find(allocation->id);
  if (held && *held == *allocation) return;
  // Not what job_test reserved (a recovered job, a resize, cons_tres's own split): recorded locally here, and the
  // shared ledger is brought in line by the reconcile this asks for.
  shared_.ReconcileSoonLocked();
  const std::optional<Allocation> old = held ? std::optional<Allocation>(*held) : std::nullopt;
  if (old) model_->ledger().Release(old->id);
  // The same usable caps (the reserve kept free) as the placement, judged against what job_test let through.
  const auto approval = approved_.find(job->job_id);
  const Allocation* approved = starting && approval != approved_.end() ? &approval->second : nullptr;
  const StartJudgement judgement = CommitStartedJob(model_->ledger(), *allocation, approved);
  if (approval != approved_.end()) approved_.erase(approval);
  if (!judgement.record.ok()) {
    error("rackwise: JobId=%u not recorded: %s", job->job_id, std::string(judgement.record.message()).c_str());
    if (old) (void)model_->ledger().Commit(*old, CommitMode::kRecover);
  }
  if (judgement.why.ok()) return;
  const std::string why(judgement.why.message());
  if (!starting) {
    // A recovered job (restart, rebuild) or a resize: what runs is recorded, nothing new goes on that power.
    info("rackwise: JobId=%u recovered above a usable cap: %s", job->job_id, why.c_str());
  } else if (judgement.verdict == StartVerdict::kLedgerMovedSince) {
    // Started as decided; a reading or another owner's reservation arrived between the decision and the start.
    // That is an overdraw like any other: the telemetry policy (on_overdraw) answers for it.
    info("rackwise: JobId=%u started as decided, above a usable cap that moved meanwhile: %s", job->job_id,
         why.c_str());
  } else {
    TakeOffOutsidePlacementLocked(job, judgement.why);
  }
}

void RackwiseSelect::TakeOffOutsidePlacementLocked(const job_record_t* job, const absl::Status& why) {
  // A start around the core (no decision let these GPUs through) that breaks a usable cap: keeping it would keep
  // a rack over its cap for the job's whole run. It stays recorded until it is gone (nothing else takes that
  // power) and is requeued at once, from the requeue thread, so that the core places it again.
  error("rackwise: JobId=%u started outside its placement, above a usable cap: %s; requeueing it", job->job_id,
        std::string(why.message()).c_str());
  if (JobRequeuer* requeuer = power_.RequeuerLocked()) {
    requeuer->Requeue(job->job_id, std::string(why.message()), "started outside its placement");
  }
}

void RackwiseSelect::ReleaseJobLocked(const std::string& id) { shared_.ReleaseLocked(id, &model_->ledger()); }

void RackwiseSelect::JobRunning(job_record_t* job) {
  std::lock_guard lock(mu_);
  if (!model_ || !job) return;
  if (!IS_JOB_RUNNING(job) && !IS_JOB_SUSPENDED(job)) return;
  // slurmctld calls nodeinfo_set for a job it has just started, and also, at startup (and at each reconfigure that
  // re-executes it), for every running job it recovered, possibly after the telemetry's first reading. A job that
  // started before this plugin was loaded is such a job: judged as a start, its own draw, already in that reading,
  // would count twice and a job that runs as placed would be requeued. It is recorded as it runs.
  CommitJobLocked(job, /*starting=*/job->start_time >= loaded_at_);
}

void RackwiseSelect::JobGone(job_record_t* job) {
  std::lock_guard lock(mu_);
  if (!model_ || !job) return;
  statically_feasible_.erase(job->job_id);
  power_.GoneLocked(JobId(job));
  refusals_.Forget(JobId(job));
  oversubscribed_.Forget(JobId(job));
  shared_.ConfirmLocked(job->job_id);
  approved_.erase(job->job_id);
  preemption_.ForgetLocked(job->job_id);
  ReleaseJobLocked(JobId(job));
}

void RackwiseSelect::JobFinished(job_record_t* job) {
  JobGone(job);
  std::lock_guard lock(mu_);
  if (!model_ || !job || !job->node_bitmap || !model_->power_limits_enforced()) return;
  std::vector<NodeId> nodes;
  for (int i : BitmapIndices(job->node_bitmap)) {
    if (NodeId n = model_->ToNode(i); n != kNoId) nodes.push_back(n);
  }
  const int64_t now = time(nullptr);
  departures_.Left(job->job_id, std::move(nodes), now);
  if (departures_.size() % 1024 == 0) departures_.Prune(now, PrologSkipWindow());
}

void RackwiseSelect::JobChanged(job_record_t* job) {
  std::lock_guard lock(mu_);
  if (!model_ || !job) return;
  if (!IS_JOB_RUNNING(job) && !IS_JOB_SUSPENDED(job)) {
    ReleaseJobLocked(JobId(job));
    return;
  }
  CommitJobLocked(job, /*starting=*/false);
}

}  // namespace rackwise::slurm
