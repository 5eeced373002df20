// SPDX-License-Identifier: GPL-2.0-or-later
// Keeps rackwise's pending reasons visible in `squeue -o %r` on Slurm >= 23.11, where select_nodes() clears a
// job's state_desc after every failed job_test whatever the reason code (22.05 kept it for
// WAIT_BLOCK_D_ACTION, which is gone). Each refusal is noted; the text is put back as soon as slurmctld's job
// write lock is free again: by the next job_test of any job, or by a small thread that waits for that lock.
// Only where select_nodes() left its generic WAIT_RESOURCES and no text: any other reason Slurm sets stands.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace rackwise::slurm {

class PendingReasons {
 public:
  PendingReasons() = default;
  PendingReasons(const PendingReasons&) = delete;
  PendingReasons& operator=(const PendingReasons&) = delete;
  ~PendingReasons();  // stops the thread

  // Starts the thread (inside slurmctld, when the reason does not survive select_nodes()).
  void Start();
  // Remembers the text for the job (called from job_test, under the job write lock).
  void Note(uint32_t job_id, std::string text);
  // Puts every noted text back where select_nodes() cleared it; keeps watching jobs whose text is still
  // there (select_nodes() may not have returned yet). The caller holds slurmctld's job write lock.
  void ApplyLocked();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t generation_ = 0;                          // bumped by every Note
  std::unordered_map<uint32_t, std::string> noted_;  // job id -> text
  std::thread thread_;
};

}  // namespace rackwise::slurm
