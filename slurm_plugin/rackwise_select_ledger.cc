// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld, second half: loading rackwise.yaml (startup and reconfigure),
// node health, and the ledger hooks that charge and release the GPUs Slurm actually gave each job.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "rackwise_select.h"
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

// job_list lives in the slurmctld binary; the plugin is also loaded by clients, where it does not exist.
// A weak reference resolves to slurmctld's list there and to nullptr elsewhere (we only use it in slurmctld).
extern "C" {
extern List job_list __attribute__((weak));
}

namespace rackwise::slurm {

std::string RackwiseSelect::DescriptionPath() const {
  std::string conf = slurm_conf.slurm_conf ? slurm_conf.slurm_conf : "";
  if (conf.empty()) {
    const char* env = getenv("SLURM_CONF");
    conf = env ? env : "/etc/slurm/slurm.conf";
  }
  const size_t slash = conf.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : conf.substr(0, slash);
  return dir + "/rackwise.yaml";
}

std::vector<SlurmNode> RackwiseSelect::SlurmNodes() const {
  std::vector<SlurmNode> nodes(node_record_count > 0 ? node_record_count : 0);
  for (int i = 0; i < node_record_count; ++i) {
    const node_record_t* node = node_record_table_ptr[i];
    if (!node || !node->name) continue;
    nodes[i].name = node->name;
    const char* gres = node->gres ? node->gres : (node->config_ptr ? node->config_ptr->gres : nullptr);
    nodes[i].gpus = gres ? GpusInGresString(gres) : 0;
  }
  return nodes;
}

absl::Status RackwiseSelect::LoadModel(bool force) {
  const std::string path = DescriptionPath();
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": cannot read the cluster description: ", std::strerror(errno)));
  if (!force && model_ && text.str() == loaded_text_ && mismatch_.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<ClusterModel>> model = ClusterModel::FromYaml(text.str(), path, SlurmNodes());
  if (!model.ok()) return model.status();
  model_ = *std::move(model);
  statically_feasible_.clear();
  loaded_text_ = text.str();
  mismatch_.clear();
  health_cache_.assign(model_->topology().nodes().size(), NodeHealth::kUp);
  ConfigureTelemetryLocked(loaded_text_, path);
  info("rackwise: loaded %s: %zu nodes, %zu NVLink domains, %zu racks, %zu power domains", path.c_str(),
       model_->topology().nodes().size(), model_->topology().domains().size(), model_->topology().racks().size(),
       model_->topology().power_domains().size());
  return absl::OkStatus();
}

int RackwiseSelect::NodeInit() {
  std::lock_guard lock(mu_);
  gpu_plugin_id_ = gres_build_id(const_cast<char*>("gpu"));
  const bool first = !model_;
  absl::Status status = LoadModel(/*force=*/true);
  if (!status.ok()) {
    if (first) {
      error("rackwise: refusing to start: %s", std::string(status.message()).c_str());
      return SLURM_ERROR;
    }
    // The node table was rebuilt: the old model's index map may no longer hold. Keep its caps, but place
    // nothing new until a description that fits is loaded.
    mismatch_ = absl::StrCat("rackwise: ", status.message(), " (fix it and run scontrol reconfigure)");
    error("%s; keeping the previous description and holding GPU jobs", mismatch_.c_str());
    return SLURM_SUCCESS;
  }
  RebuildLedgerLocked();
  return SLURM_SUCCESS;
}

void RackwiseSelect::Reconfigure() {
  std::lock_guard lock(mu_);
  if (!model_) return;
  absl::Status status = LoadModel(/*force=*/false);
  if (!status.ok()) {
    error("rackwise: keeping the previous cluster description: %s", std::string(status.message()).c_str());
  }
  RebuildLedgerLocked();
}

void RackwiseSelect::RebuildLedgerLocked() {
  if (!model_) return;
  // Caps and health come from the description and Slurm; allocations from the running jobs.
  for (const Allocation* a : model_->ledger().Allocations()) {
    const std::string id = a->id;
    model_->ledger().Release(id);
  }
  SyncHealthLocked();
  if (!&job_list || !job_list) return;
  ListIterator it = list_iterator_create(job_list);
  int recovered = 0;
  while (job_record_t* job = static_cast<job_record_t*>(list_next(it))) {
    if (IS_JOB_RUNNING(job) || IS_JOB_SUSPENDED(job)) {
      CommitJobLocked(job, /*starting=*/false);
      ++recovered;
    }
  }
  list_iterator_destroy(it);
  debug("rackwise: ledger rebuilt from %d running jobs, %zu hold GPUs", recovered, model_->ledger().allocation_count());
}

void RackwiseSelect::SyncHealthLocked() {
  for (NodeId n = 0; n < static_cast<NodeId>(model_->topology().nodes().size()); ++n) {
    const int i = model_->ToSlurm(n);
    const node_record_t* node = (i >= 0 && i < node_record_count) ? node_record_table_ptr[i] : nullptr;
    const NodeHealth health = node ? HealthOf(node) : NodeHealth::kDown;
    if (health != health_cache_[n]) {
      model_->ledger().SetNodeHealth(n, health);
      health_cache_[n] = health;
    }
  }
}

std::optional<Allocation> RackwiseSelect::AllocatedGpus(const job_record_t* job) const {
  const std::vector<int> job_nodes = BitmapIndices(job->node_bitmap);
  std::vector<GpuMask> masks(job_nodes.size(), 0);
  std::vector<uint64_t> counts(job_nodes.size(), 0);
  ForEachGpuState(job->gres_list_alloc, gpu_plugin_id_, [&](gres_state_t* state) {
    const auto* js = static_cast<const gres_job_state_t*>(state->gres_data);
    for (uint32_t j = 0; j < js->node_cnt && j < job_nodes.size(); ++j) {
      if (js->gres_bit_alloc && js->gres_bit_alloc[j]) {
        masks[j] |= BitsToMask(js->gres_bit_alloc[j]);
      } else if (js->gres_cnt_node_alloc) {
        counts[j] += js->gres_cnt_node_alloc[j];
      }
    }
  });
  Allocation allocation;
  allocation.id = JobId(job);
  allocation.per_gpu = JobWatts(job);
  for (size_t j = 0; j < job_nodes.size(); ++j) {
    const NodeId n = model_->ToNode(job_nodes[j]);
    if (n == kNoId) continue;
    GpuMask mask = masks[j];
    if (counts[j]) mask |= LowestBits(~(model_->ledger().allocated_gpus(n) | mask), counts[j]);
    if (mask) allocation.nodes.push_back({n, mask});
  }
  if (allocation.nodes.empty()) return std::nullopt;
  std::sort(allocation.nodes.begin(), allocation.nodes.end(),
            [](const NodeGpus& a, const NodeGpus& b) { return a.node < b.node; });
  return allocation;
}

void RackwiseSelect::CommitJobLocked(job_record_t* job, bool starting) {
  std::optional<Allocation> allocation = AllocatedGpus(job);
  if (!allocation) return;
  const Allocation* held = model_->ledger().Find(allocation->id);
  if (held && *held == *allocation) return;
  absl::Status status = model_->ledger().Replace(*allocation, CommitMode::kEnforce);
  if (status.ok()) return;
  // Record what runs even if it breaks a cap (lowered meanwhile, or started around us): nothing new is
  // placed there until the draw falls.
  absl::Status recovered = model_->ledger().Replace(*allocation, CommitMode::kRecover);
  if (starting) {
    error("rackwise: JobId=%u started outside the ledger's limits: %s", job->job_id,
          std::string(status.message()).c_str());
  } else {
    info("rackwise: JobId=%u recovered above a cap: %s", job->job_id, std::string(status.message()).c_str());
  }
  if (!recovered.ok()) {
    error("rackwise: JobId=%u not recorded: %s", job->job_id, std::string(recovered.message()).c_str());
  }
}

void RackwiseSelect::JobRunning(job_record_t* job) {
  std::lock_guard lock(mu_);
  if (!model_ || !job) return;
  if (!IS_JOB_RUNNING(job) && !IS_JOB_SUSPENDED(job)) return;
  CommitJobLocked(job, /*starting=*/true);
}

void RackwiseSelect::JobGone(job_record_t* job) {
  std::lock_guard lock(mu_);
  if (!model_ || !job) return;
  statically_feasible_.erase(job->job_id);
  model_->ledger().Release(JobId(job));
}

void RackwiseSelect::JobChanged(job_record_t* job) {
  std::lock_guard lock(mu_);
  if (!model_ || !job) return;
  if (!IS_JOB_RUNNING(job) && !IS_JOB_SUSPENDED(job)) {
    model_->ledger().Release(JobId(job));
    return;
  }
  CommitJobLocked(job, /*starting=*/false);
}

}  // namespace rackwise::slurm
