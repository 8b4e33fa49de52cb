#include "testing/virtual_clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace humus::testing {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(VirtualClock, TimeMovesOnlyWhenAdvanced) {
  VirtualClock clock;
  const Instant start = clock.now();
  const WallTime wall = clock.wall_now();
  std::this_thread::sleep_for(milliseconds(2));
  EXPECT_EQ(clock.now(), start);
  clock.advance(seconds(3));
  EXPECT_EQ(clock.now() - start, seconds(3));
  EXPECT_EQ(clock.wall_now() - wall, seconds(3));
  clock.advance(-seconds(1));  // ignored: time never goes back
  EXPECT_EQ(clock.now() - start, seconds(3));
}

TEST(VirtualClock, SleeperWakesWhenTimeReachesItsDeadline) {
  VirtualClock clock;
  Signal wake;
  std::atomic<bool> woke_by_signal{true};
  std::atomic<bool> done{false};
  const Instant deadline = clock.now() + seconds(2);
  std::thread sleeper([&] {
    woke_by_signal = clock.sleep_until(deadline, wake);
    done = true;
  });
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  clock.advance(milliseconds(1999));
  EXPECT_FALSE(done.load());
  EXPECT_EQ(clock.sleepers(), 1u);
  clock.advance(milliseconds(1));
  sleeper.join();
  EXPECT_TRUE(done.load());
  EXPECT_FALSE(woke_by_signal.load());
  EXPECT_EQ(clock.sleepers(), 0u);
}

TEST(VirtualClock, SignalWakesSleeperBeforeDeadline) {
  VirtualClock clock;
  Signal wake;
  std::atomic<bool> woke_by_signal{false};
  std::thread sleeper([&] { woke_by_signal = clock.sleep_until(clock.now() + seconds(60), wake); });
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  wake.notify();
  sleeper.join();
  EXPECT_TRUE(woke_by_signal.load());
}

TEST(VirtualClock, SignalNotifiedBeforeSleepIsNotLost) {
  VirtualClock clock;
  Signal wake;
  wake.notify();
  EXPECT_TRUE(clock.sleep_until(clock.now() + seconds(60), wake));
}

TEST(VirtualClock, PastDeadlineReturnsAtOnce) {
  VirtualClock clock;
  Signal wake;
  EXPECT_FALSE(clock.sleep_until(clock.now(), wake));
}

TEST(VirtualClock, AutoAdvanceJumpsToEarliestDeadlineWithoutRealTime) {
  VirtualClock clock;
  clock.set_auto_advance(true);
  Signal wake;
  const Instant start = clock.now();
  const auto real_start = std::chrono::steady_clock::now();
  // A two-minute sleep: returning in less than half of it in real time says it took none, on any machine.
  EXPECT_FALSE(clock.sleep_until(start + seconds(120), wake));
  EXPECT_EQ(clock.now() - start, seconds(120));
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, seconds(60));
}

TEST(VirtualClock, AutoAdvanceWaitsForBusyParticipants) {
  VirtualClock clock;
  clock.set_auto_advance(true);
  const Instant start = clock.now();
  std::atomic<bool> done{false};
  std::thread sleeper;
  {
    VirtualClock::Hold busy(clock);  // the test thread is doing non-timer work
    sleeper = std::thread([&] {
      Signal wake;
      (void)clock.sleep_until(start + seconds(5), wake);
      done = true;
    });
    ASSERT_TRUE(clock.wait_for_sleepers(1));
    std::this_thread::sleep_for(milliseconds(5));
    EXPECT_FALSE(done.load());
    EXPECT_EQ(clock.now(), start);
  }  // releasing the hold lets time jump
  sleeper.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(clock.now() - start, seconds(5));
}

TEST(VirtualClock, ParticipantAsleepDoesNotBlockAutoAdvance) {
  VirtualClock clock;
  clock.set_auto_advance(true);
  VirtualClock::Hold busy(clock);  // a call in flight: busy, except while it sleeps on the clock
  Signal wake;
  const Instant start = clock.now();
  EXPECT_FALSE(clock.sleep_until(start + seconds(1), wake));
  EXPECT_EQ(clock.now() - start, seconds(1));
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::testing
