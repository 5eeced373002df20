// The poller fetches at once, then every interval, and stops promptly.
#include "telemetry_poller.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

namespace rackwise::telemetry {
namespace {

TEST(TelemetryPollerTest, FetchesRepeatedlyAndStops) {
  std::mutex mu;
  std::condition_variable cv;
  int delivered = 0;
  {
    TelemetryPoller p(
        0.02,
        [] {
          PowerReadings r;
          r.nodes_ok = true;
          return r;
        },
        [&](const PowerReadings& r) {
          EXPECT_TRUE(r.nodes_ok);
          std::lock_guard<std::mutex> lock(mu);
          ++delivered;
          cv.notify_all();
        });
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return delivered >= 3; }));
  }
  const int after_stop = delivered;
  EXPECT_GE(after_stop, 3);
}

TEST(TelemetryPollerTest, StopDoesNotWaitForTheInterval) {
  const auto start = std::chrono::steady_clock::now();
  {
    TelemetryPoller p(
        3600, [] { return PowerReadings{}; }, [](const PowerReadings&) {});
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace rackwise::telemetry
