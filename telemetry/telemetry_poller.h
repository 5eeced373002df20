// A background thread that fetches power readings every interval and hands them to a callback (which applies
// them under the face's own lock). The first fetch happens at once. Stop() (or the destructor) wakes the thread
// and joins it; a fetch in flight finishes first, bounded by the client's timeouts.
#pragma once

#include <chrono>
#include <functional>

#include "periodic_thread.h"
#include "rackwise/telemetry.h"

namespace rackwise::telemetry {

class TelemetryPoller {
 public:
  using Fetch = std::function<PowerReadings()>;
  using Deliver = std::function<void(const PowerReadings&)>;

  TelemetryPoller(double interval_s, Fetch fetch, Deliver deliver);
  TelemetryPoller(const TelemetryPoller&) = delete;
  TelemetryPoller& operator=(const TelemetryPoller&) = delete;

  void Stop() { thread_.Stop(); }

 private:
  const std::chrono::milliseconds interval_;
  Fetch fetch_;
  Deliver deliver_;
  PeriodicThread thread_;  // last: its first beat runs at once, on the members above
};

}  // namespace rackwise::telemetry
