// PeriodicThread: when the beat runs (at once or after the wait, on a wake), that the beat's answer sets the
// wait, and that Stop() ends a long wait. No test sleeps: each waits on a
// count, and a wait the thread wrongly skipped shows as a count that is too high when it is stopped.
#include "periodic_thread.h"

#include <gtest/gtest.h>

#include <atomic>

#include "rackwise/testing/child_process.h"

namespace rackwise {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using testing::WaitFor;

constexpr milliseconds kBound{30'000};

// A beat that counts itself and then waits an hour.
PeriodicThread::Beat CountThenWaitAnHour(std::atomic<int>* beats) {
  return [beats] {
    ++*beats;
    return milliseconds(hours(1));
  };
}

TEST(PeriodicThreadTest, FirstBeatAtOnceThenTheLongWaitThatStopEnds) {
  std::atomic<int> beats{0};
  PeriodicThread thread(CountThenWaitAnHour(&beats), PeriodicThread::FirstBeat::kAtOnce);
  EXPECT_EQ(WaitFor(
                "the first beat", [&] { return beats == 1; }, kBound),
            "");
  thread.Stop();  // would hang for an hour if Stop did not end the wait
  EXPECT_EQ(beats, 1);
  thread.Stop();  // twice is harmless
}

TEST(PeriodicThreadTest, AfterWaitRunsNothingUntilWokenAndStopWithoutABeat) {
  std::atomic<int> beats{0};
  {
    PeriodicThread idle(CountThenWaitAnHour(&beats), PeriodicThread::FirstBeat::kAfterWait, hours(1));
  }  // the destructor stops it during its first wait
  EXPECT_EQ(beats, 0);

  PeriodicThread thread(CountThenWaitAnHour(&beats), PeriodicThread::FirstBeat::kAfterWait, hours(1));
  thread.Wake();
  EXPECT_EQ(WaitFor(
                "a beat on the first wake", [&] { return beats == 1; }, kBound),
            "");
  thread.Wake();
  EXPECT_EQ(WaitFor(
                "a beat on the second wake", [&] { return beats == 2; }, kBound),
            "");
  thread.Stop();
  EXPECT_EQ(beats, 2);
}

TEST(PeriodicThreadTest, TheBeatsAnswerIsTheNextWait) {
  std::atomic<int> beats{0};
  // Five beats back to back (no wait), then an hour: exactly five by the time it is stopped.
  PeriodicThread thread([&] { return ++beats < 5 ? milliseconds(0) : milliseconds(hours(1)); },
                        PeriodicThread::FirstBeat::kAtOnce);
  EXPECT_EQ(WaitFor(
                "five beats", [&] { return beats >= 5; }, kBound),
            "");
  thread.Stop();
  EXPECT_EQ(beats, 5);
}

TEST(PeriodicThreadTest, AWakeDuringABeatRunsOneMoreRightAfterIt) {
  std::atomic<int> beats{0};
  std::atomic<bool> in_first{false}, release_first{false};
  PeriodicThread thread(
      [&] {
        if (++beats == 1) {
          in_first = true;
          while (!release_first) std::this_thread::yield();
        }
        return milliseconds(hours(1));
      },
      PeriodicThread::FirstBeat::kAtOnce);
  ASSERT_EQ(WaitFor(
                "the first beat started", [&] { return in_first.load(); }, kBound),
            "");
  thread.Wake();  // while the first beat runs: kept, not lost
  release_first = true;
  EXPECT_EQ(WaitFor(
                "the beat the wake asked for", [&] { return beats == 2; }, kBound),
            "");
  thread.Stop();
  EXPECT_EQ(beats, 2);
}

}  // namespace
}  // namespace rackwise
