// SPDX-License-Identifier: GPL-2.0-or-later
// JobRequeuer; see job_requeuer.h.
#include "job_requeuer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rackwise::slurm {

JobRequeuer::JobRequeuer(RequeueFn requeue, LogFn log)
    : requeue_(std::move(requeue)), log_(std::move(log)), thread_([this] { Run(); }) {}

JobRequeuer::~JobRequeuer() {
  std::deque<Item> dropped;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  thread_.join();
  for (const Item& item : dropped) {
    Log(false, item,
        absl::StrCat("JobId=", item.job_id, " not requeued (", item.why, "): the plugin is shutting down"));
  }
}

void JobRequeuer::Log(bool ok, const Item& item, const std::string& line) const {
  log_(ok, item.label.empty() ? line : absl::StrCat(item.label, ": ", line));
}

void JobRequeuer::Requeue(uint32_t job_id, std::string why, std::string label) {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    const bool queued = std::any_of(queue_.begin(), queue_.end(), [&](const Item& i) { return i.job_id == job_id; });
    if (queued) return;
    queue_.push_back({job_id, std::move(why), std::move(label)});
  }
  cv_.notify_all();
}

void JobRequeuer::Drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return (queue_.empty() && !busy_) || stop_; });
}

void JobRequeuer::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    const std::string error = requeue_(item.job_id);
    if (error.empty()) {
      Log(true, item, absl::StrCat("requeued JobId=", item.job_id, " (", item.why, ")"));
    } else {
      Log(false, item, absl::StrCat("cannot requeue JobId=", item.job_id, " (", item.why, "): ", error));
    }
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace rackwise::slurm
