// See periodic_thread.h.
#include "periodic_thread.h"

namespace rackwise {

PeriodicThread::PeriodicThread(Beat beat, FirstBeat first, std::chrono::milliseconds first_wait)
    : beat_(std::move(beat)), thread_([this, first, first_wait] { Run(first, first_wait); }) {}

PeriodicThread::~PeriodicThread() { Stop(); }

void PeriodicThread::Wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  wake_.notify_all();
}

void PeriodicThread::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool PeriodicThread::WaitRound(std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, wait, [this] { return woken_ || stopping_; });
  woken_ = false;
  return !stopping_;
}

void PeriodicThread::Run(FirstBeat first, std::chrono::milliseconds first_wait) {
  std::chrono::milliseconds wait = first_wait;
  if (first == FirstBeat::kAtOnce) wait = beat_();
  while (WaitRound(wait)) wait = beat_();
}

}  // namespace rackwise
