// SPDX-License-Identifier: GPL-2.0-or-later
// Tests for JobRequeuer: calls happen on its own thread, once per queued job, with the outcome logged.
#include "job_requeuer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rackwise::slurm {
namespace {

struct Recorder {
  std::mutex mu;
  std::vector<uint32_t> calls;
  std::vector<std::string> lines;
  std::vector<std::thread::id> threads;
};

TEST(JobRequeuerTest, RequeuesOnItsOwnThreadAndLogsEachOutcome) {
  Recorder r;
  {
    JobRequeuer requeuer(
        [&](uint32_t job) {
          std::lock_guard lock(r.mu);
          r.calls.push_back(job);
          r.threads.push_back(std::this_thread::get_id());
          return job == 13 ? std::string("Requested operation is presently disabled") : std::string();
        },
        [&](bool ok, const std::string& line) {
          std::lock_guard lock(r.mu);
          r.lines.push_back((ok ? "ok: " : "error: ") + line);
        });
    requeuer.Requeue(12, "rack r1 over its cap");
    requeuer.Requeue(13, "rack r1 over its cap");
    requeuer.Requeue(14, "on nodes rackwise did not choose", "started outside its placement");
    requeuer.Drain();
  }
  ASSERT_EQ(r.calls, (std::vector<uint32_t>{12, 13, 14}));
  EXPECT_NE(r.threads[0], std::this_thread::get_id());
  EXPECT_EQ(r.lines,
            (std::vector<std::string>{
                "ok: requeued JobId=12 (rack r1 over its cap)",
                "error: cannot requeue JobId=13 (rack r1 over its cap): Requested operation is presently disabled",
                "ok: started outside its placement: requeued JobId=14 (on nodes rackwise did not choose)",
            }));
}

TEST(JobRequeuerTest, AJobQueuedTwiceWhileWaitingIsRequeuedOnce) {
  std::mutex gate;
  gate.lock();  // the first call blocks until released, so that the others stay queued meanwhile
  std::atomic<int> started = 0;
  std::vector<uint32_t> calls;
  std::mutex calls_mu;
  JobRequeuer requeuer(
      [&](uint32_t job) {
        ++started;
        std::lock_guard lock(gate);
        std::lock_guard calls_lock(calls_mu);
        calls.push_back(job);
        return std::string();
      },
      [](bool, const std::string&) {});
  requeuer.Requeue(1, "a");
  while (started.load() == 0) std::this_thread::yield();  // job 1 is in its call
  requeuer.Requeue(2, "b");
  requeuer.Requeue(2, "b again");
  requeuer.Requeue(3, "c");
  gate.unlock();
  requeuer.Drain();
  EXPECT_EQ(calls, (std::vector<uint32_t>{1, 2, 3}));
}

}  // namespace
}  // namespace rackwise::slurm
