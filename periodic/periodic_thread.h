// One background thread that runs a beat over and over: after a wait that the beat itself chooses, or at once
// when woken, until stopped. The faces' and daemons' loops (telemetry polling, publishing the ledger, syncing
// with the shared ledger, expiring gang reservations) differ only in what a beat does and how long it waits.
//
// Stop() wakes the thread and joins it; a beat in progress finishes first (so a beat that may wait on something
// slow watches a stop flag of its owner's, set before Stop). Never call Stop() from the beat.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace rackwise {

class PeriodicThread {
 public:
  // Runs once per round; returns how long to wait before the next round (a Wake() cuts the wait short).
  using Beat = std::function<std::chrono::milliseconds()>;
  enum class FirstBeat { kAtOnce, kAfterWait };

  // Starts the thread. With kAfterWait the first round waits `first_wait` (or a Wake()) before its beat.
  PeriodicThread(Beat beat, FirstBeat first, std::chrono::milliseconds first_wait = std::chrono::milliseconds(0));
  ~PeriodicThread();  // Stop()
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  // Ends the current wait: the next beat runs now (or, when a beat is running, right after it).
  void Wake();
  // Wakes and joins the thread. Safe twice.
  void Stop();

 private:
  void Run(FirstBeat first, std::chrono::milliseconds first_wait);
  // Waits `wait` or until woken or stopped; false when stopped.
  bool WaitRound(std::chrono::milliseconds wait);

  const Beat beat_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool woken_ = false;     // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;     // last: started once everything above is initialised
};

}  // namespace rackwise
