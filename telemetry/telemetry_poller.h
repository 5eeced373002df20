// A background thread that fetches power readings every interval and hands them to a callback (which applies
// them under the face's own lock). The first fetch happens at once. Stop() (or the destructor) wakes the thread
// and joins it; a fetch in flight finishes first, bounded by the client's timeouts.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "rackwise/telemetry.h"

namespace rackwise::telemetry {

class TelemetryPoller {
 public:
  using Fetch = std::function<PowerReadings()>;
  using Deliver = std::function<void(const PowerReadings&)>;

  TelemetryPoller(double interval_s, Fetch fetch, Deliver deliver);
  ~TelemetryPoller();
  TelemetryPoller(const TelemetryPoller&) = delete;
  TelemetryPoller& operator=(const TelemetryPoller&) = delete;

  void Stop();

 private:
  void Run();

  const std::chrono::milliseconds interval_;
  Fetch fetch_;
  Deliver deliver_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace rackwise::telemetry
