// See telemetry_poller.h.
#include "telemetry_poller.h"

#include <algorithm>

namespace rackwise::telemetry {

TelemetryPoller::TelemetryPoller(double interval_s, Fetch fetch, Deliver deliver)
    : interval_(static_cast<long long>(std::clamp(interval_s, 0.01, 86400.0) * 1000)),
      fetch_(std::move(fetch)),
      deliver_(std::move(deliver)),
      thread_([this] { Run(); }) {}

TelemetryPoller::~TelemetryPoller() { Stop(); }

void TelemetryPoller::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TelemetryPoller::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    PowerReadings readings = fetch_();  // outside our lock: Stop() must not wait for a slow server to take it
    deliver_(readings);
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

}  // namespace rackwise::telemetry
