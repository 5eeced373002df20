// See telemetry_poller.h.
#include "telemetry_poller.h"

#include <algorithm>

namespace rackwise::telemetry {

TelemetryPoller::TelemetryPoller(double interval_s, Fetch fetch, Deliver deliver)
    : interval_(static_cast<long long>(std::clamp(interval_s, 0.01, 86400.0) * 1000)),
      fetch_(std::move(fetch)),
      deliver_(std::move(deliver)),
      thread_(
          [this] {
            // The fetch holds no lock of ours: Stop() must not wait for a slow server to take one.
            deliver_(fetch_());
            return interval_;
          },
          PeriodicThread::FirstBeat::kAtOnce) {}

}  // namespace rackwise::telemetry
