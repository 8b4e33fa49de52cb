// The event loop's timers (src/transport/timer_heap.h): deadline order with ties in the order added, stale
// ids that cancel nothing, tasks that add and cancel timers, and cancelled entries that do not pile up.
#include "transport/timer_heap.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace humus::transport {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using std::chrono::seconds;

const Instant t0 = Instant(seconds(1000));

// Runs every timer due at `now`, in order; returns how many ran.
int run_due(TimerHeap& h, Instant now) {
  int ran = 0;
  while (TimerHeap::Task task = h.pop_due(now)) {
    task();
    ++ran;
  }
  return ran;
}

TEST(TimerHeapTest, TimersRunByDeadlineAndTiesInTheOrderAdded) {
  TimerHeap h;
  std::string order;
  h.add(t0 + milliseconds(30), [&] { order += "c"; });
  h.add(t0 + milliseconds(10), [&] { order += "a"; });
  h.add(t0 + milliseconds(20), [&] { order += "b1"; });
  h.add(t0 + milliseconds(20), [&] { order += "b2"; });
  h.add(t0 + milliseconds(20), [&] { order += "b3"; });
  EXPECT_EQ(h.next(), t0 + milliseconds(10));
  EXPECT_EQ(run_due(h, t0), 0);
  EXPECT_EQ(run_due(h, t0 + milliseconds(20)), 4);
  EXPECT_EQ(order, "ab1b2b3");
  EXPECT_EQ(h.next(), t0 + milliseconds(30));
  EXPECT_EQ(run_due(h, t0 + seconds(1)), 1);
  EXPECT_EQ(order, "ab1b2b3c");
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.next(), Instant::max());
}

TEST(TimerHeapTest, ACancelledTimerNeverRunsAndItsTaskIsReleasedAtOnce) {
  TimerHeap h;
  auto held = std::make_shared<int>(7);
  std::weak_ptr<int> watch = held;
  bool ran = false;
  const TimerHeap::Id id = h.add(t0 + milliseconds(5), [&ran, held] { ran = true; });
  held.reset();
  EXPECT_FALSE(watch.expired());
  h.cancel(id);
  EXPECT_TRUE(watch.expired()) << "the task's captures outlived its cancellation";
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.next(), Instant::max()) << "a cancelled timer still set the next deadline";
  EXPECT_EQ(run_due(h, t0 + seconds(1)), 0);
  EXPECT_FALSE(ran);
}

TEST(TimerHeapTest, AStaleIdCancelsNothingEvenWhenItsSlotHoldsAnotherTimer) {
  TimerHeap h;
  const TimerHeap::Id first = h.add(t0, [] {});
  EXPECT_NE(first, 0u);
  EXPECT_EQ(run_due(h, t0), 1);  // ran: `first` is stale now
  bool ran = false;
  const TimerHeap::Id second = h.add(t0 + milliseconds(1), [&] { ran = true; });  // reuses the slot
  EXPECT_NE(second, first);
  h.cancel(first);
  h.cancel(first + (uint64_t{1} << 60));  // a slot that does not exist
  h.cancel(0);
  EXPECT_EQ(h.size(), 1u);
  EXPECT_EQ(run_due(h, t0 + milliseconds(1)), 1);
  EXPECT_TRUE(ran);
  h.cancel(second);  // after it ran: nothing
  EXPECT_TRUE(h.empty());
}

TEST(TimerHeapTest, ATaskMayAddAndCancelTimersWhileTheHeapRunsIt) {
  TimerHeap h;
  std::vector<int> ran;
  TimerHeap::Id doomed = 0;
  h.add(t0, [&] {
    ran.push_back(1);
    h.cancel(doomed);
    h.add(t0, [&] { ran.push_back(3); });  // due already: runs in the same pass, after the one before it
    for (int i = 0; i < 100; ++i)
      h.add(t0 + seconds(60 + i), [] {});  // grows the slots under the running task
  });
  h.add(t0, [&] { ran.push_back(2); });
  doomed = h.add(t0, [&] { ran.push_back(-1); });
  EXPECT_EQ(run_due(h, t0), 3);
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(h.size(), 100u);
}

TEST(TimerHeapTest, AReleasedTaskMayCancelAnotherTimer) {
  // A task's captures may own something whose destructor cancels a timer (an attempt's deadline, say).
  TimerHeap h;
  bool other_ran = false;
  const TimerHeap::Id other = h.add(t0 + milliseconds(2), [&] { other_ran = true; });
  struct CancelsOnDestruction {
    TimerHeap* heap;
    TimerHeap::Id id;
    ~CancelsOnDestruction() { heap->cancel(id); }
  };
  auto owner = std::make_shared<CancelsOnDestruction>(CancelsOnDestruction{&h, other});
  const TimerHeap::Id id = h.add(t0 + milliseconds(1), [owner] {});
  owner.reset();
  h.cancel(id);
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(run_due(h, t0 + seconds(1)), 0);
  EXPECT_FALSE(other_ran);
}

TEST(TimerHeapTest, CancelledFarDeadlinesDoNotPileUp) {
  // Each call arms a deadline far off and cancels it when it ends early: a million calls must not leave a
  // million entries behind.
  TimerHeap h;
  const TimerHeap::Id kept = h.add(t0 + seconds(3600), [] {});
  for (int i = 0; i < 1'000'000; ++i) h.cancel(h.add(t0 + seconds(30) + milliseconds(i), [] {}));
  EXPECT_EQ(h.size(), 1u);
  EXPECT_LE(h.entries(), 200u);
  EXPECT_EQ(h.next(), t0 + seconds(3600));
  h.cancel(kept);
  EXPECT_TRUE(h.empty());
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::transport
