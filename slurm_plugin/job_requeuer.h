// SPDX-License-Identifier: GPL-2.0-or-later
// Requeues jobs from a thread of its own (telemetry.on_overdraw: requeue_newest). The select plugin decides
// inside slurmctld's scheduling path, which holds slurmctld's job and node locks; requeueing there would
// re-enter them. So the decision only queues the job ids, and this thread asks slurmctld through its own RPC
// (slurm_requeue), which takes the locks in the usual order. Slurm-free (the call is injected), so that it is
// unit-tested without slurmctld.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace rackwise::slurm {

class JobRequeuer {
 public:
  // Asks for the requeue of `job_id`; returns an empty string on success, else why not.
  using RequeueFn = std::function<std::string(uint32_t job_id)>;
  using LogFn = std::function<void(bool ok, const std::string& line)>;

  // Starts the thread (std::system_error if it cannot).
  JobRequeuer(RequeueFn requeue, LogFn log);
  // Stops after the call in progress, if any (one RPC, bounded by slurm.conf's MessageTimeout); what is still
  // queued is dropped and logged.
  ~JobRequeuer();
  JobRequeuer(const JobRequeuer&) = delete;
  JobRequeuer& operator=(const JobRequeuer&) = delete;

  // Queues `job_id` (`why` goes into the log line, after `label` and a colon when `label` is given, so that each
  // cause of a requeue has lines of its own to grep). A job already queued is not queued twice.
  void Requeue(uint32_t job_id, std::string why, std::string label = "");
  // Blocks until the queue is empty and no call is in progress (tests).
  void Drain();

 private:
  struct Item {
    uint32_t job_id;
    std::string why;
    std::string label;
  };
  void Log(bool ok, const Item& item, const std::string& line) const;
  void Run();

  RequeueFn requeue_;
  LogFn log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace rackwise::slurm
