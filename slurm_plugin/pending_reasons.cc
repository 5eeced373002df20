// SPDX-License-Identifier: GPL-2.0-or-later
// See pending_reasons.h.
#include "pending_reasons.h"

#include <chrono>

// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

// slurmctld_config lives in the slurmctld binary; slurmd and the clients load the plugin too, where it does
// not exist: a weak reference (nullptr there) keeps the plugin loadable everywhere.
#pragma weak slurmctld_config

namespace rackwise::slurm {
namespace {

constexpr size_t kMaxNoted = 100000;  // one per refused job_test between two applications

bool ShuttingDown() { return &slurmctld_config == nullptr || slurmctld_config.shutdown_time != 0; }

}  // namespace

PendingReasons::~PendingReasons() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PendingReasons::Start() {
  if (kReasonSurvivesSelectNodes || thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void PendingReasons::Note(uint32_t job_id, std::string text) {
  if (kReasonSurvivesSelectNodes) return;
  {
    std::lock_guard lock(mu_);
    if (noted_.size() >= kMaxNoted && !noted_.contains(job_id)) return;
    noted_[job_id] = std::move(text);
    ++generation_;
  }
  cv_.notify_one();
}

void PendingReasons::ApplyLocked() {
  std::lock_guard lock(mu_);
  for (auto it = noted_.begin(); it != noted_.end();) {
    job_record_t* job = find_job_record(it->first);
    const std::string& text = it->second;
    if (job && IS_JOB_PENDING(job) && job->state_desc && text == job->state_desc) {
      ++it;  // still shown: select_nodes() may clear it when it returns, so keep watching
    } else if (job && IS_JOB_PENDING(job) && !job->state_desc && job->state_reason == kPendingReason) {
      job->state_desc = xstrdup(text.c_str());
      ++it;
    } else {
      it = noted_.erase(it);  // started, gone, or Slurm gave another reason: that one stands
    }
  }
}

void PendingReasons::Run() {
  std::unique_lock lock(mu_);
  uint64_t seen = 0;
  while (!stop_) {
    // Right after a new refusal (the lock below then waits for select_nodes() to finish), else once a second
    // while refused jobs are watched.
    cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stop_ || generation_ != seen; });
    seen = generation_;
    if (stop_ || noted_.empty()) continue;
    lock.unlock();
    if (!ShuttingDown()) {
      slurmctld_lock_t job_write{};
      job_write.job = WRITE_LOCK;
      lock_slurmctld(job_write);
      if (!ShuttingDown()) ApplyLocked();
      unlock_slurmctld(job_write);
    }
    lock.lock();
    if (ShuttingDown()) break;
  }
}

}  // namespace rackwise::slurm
