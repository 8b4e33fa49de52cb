#include "bulkhead/bulkhead.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "testing/virtual_clock.h"

namespace humus::bulkhead {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::VirtualClock;

// Runs acquire() on its own thread and keeps what it got.
class Caller {
 public:
  Caller(Bulkhead& b, Instant deadline = Instant::max(), CancelToken* cancel = nullptr)
      : thread_([this, &b, deadline, cancel] {
          Result<Slot> r = b.acquire(deadline, cancel);
          std::lock_guard<std::mutex> lock(mu_);
          if (r.ok()) {
            slot_ = std::move(r).value();
          } else {
            status_ = r.status();
          }
        }) {}
  ~Caller() {
    if (thread_.joinable()) thread_.join();
  }
  void join() { thread_.join(); }
  // After join():
  bool got_slot() const { return slot_.held(); }
  Code code() const { return status_.code(); }
  const std::string& message() const { return status_.message(); }
  Slot& slot() { return slot_; }

 private:
  std::mutex mu_;
  Slot slot_;
  Status status_;
  std::thread thread_;
};

// F104
TEST(Bulkhead, LimitIsEnforcedAndWaitZeroTurnsAwayAtOnce) {
  VirtualClock clock;
  Bulkhead b(2, Duration::zero(), clock);
  Result<Slot> one = b.acquire();
  Result<Slot> two = b.acquire();
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(b.in_flight(), 2u);
  const Instant before = clock.now();
  Result<Slot> three = b.acquire();
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.status().code(), Code::kBulkheadFull);
  EXPECT_EQ(three.status().message(), "bulkhead full: 2 calls in flight, none freed within 0s");
  EXPECT_EQ(clock.now(), before);
  EXPECT_EQ(b.in_flight(), 2u);
  EXPECT_EQ(b.waiting(), 0u);
}

TEST(Bulkhead, SlotIsGivenBackOnDestructionAndRelease) {
  VirtualClock clock;
  Bulkhead b(1, Duration::zero(), clock);
  {
    Result<Slot> s = b.acquire();
    ASSERT_TRUE(s.ok());
    EXPECT_FALSE(b.acquire().ok());
  }
  EXPECT_EQ(b.in_flight(), 0u);
  Result<Slot> s = b.acquire();
  ASSERT_TRUE(s.ok());
  Slot moved = std::move(s).value();
  EXPECT_TRUE(moved.held());
  EXPECT_EQ(b.in_flight(), 1u);
  moved.release();
  moved.release();  // idempotent
  EXPECT_FALSE(moved.held());
  EXPECT_EQ(b.in_flight(), 0u);
}

TEST(Bulkhead, MoveAssignmentReleasesTheOldSlot) {
  VirtualClock clock;
  Bulkhead b(2, Duration::zero(), clock);
  Slot a = b.acquire().value();
  Slot c = b.acquire().value();
  EXPECT_EQ(b.in_flight(), 2u);
  a = std::move(c);
  EXPECT_EQ(b.in_flight(), 1u);
  a = Slot();
  EXPECT_EQ(b.in_flight(), 0u);
}

TEST(Bulkhead, WaiterGetsASlotReleasedWithinTheWait) {
  VirtualClock clock;
  Bulkhead b(1, milliseconds(500), clock);
  Slot held = b.acquire().value();
  Caller waiter(b);
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  EXPECT_EQ(b.waiting(), 1u);
  clock.advance(milliseconds(200));
  held.release();
  waiter.join();
  EXPECT_TRUE(waiter.got_slot());
  EXPECT_EQ(b.in_flight(), 1u);
  EXPECT_EQ(b.waiting(), 0u);
  waiter.slot().release();
  EXPECT_EQ(b.in_flight(), 0u);
}

TEST(Bulkhead, WaiterTimesOutAfterExactlyTheWait) {
  VirtualClock clock;
  Bulkhead b(50, milliseconds(500), clock);
  std::vector<Slot> held;
  for (int i = 0; i < 50; ++i) held.push_back(b.acquire().value());
  const Instant start = clock.now();
  Caller waiter(b);
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  clock.advance(milliseconds(499));
  // Still queued: give the thread a moment to (wrongly) finish if it were going to.
  std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(b.waiting(), 1u);
  clock.advance(milliseconds(1));
  waiter.join();
  EXPECT_FALSE(waiter.got_slot());
  EXPECT_EQ(waiter.code(), Code::kBulkheadFull);
  EXPECT_EQ(waiter.message(), "bulkhead full: 50 calls in flight, none freed within 500ms");
  EXPECT_EQ(clock.now() - start, milliseconds(500));
  EXPECT_EQ(b.waiting(), 0u);
  EXPECT_EQ(b.in_flight(), 50u);
}

TEST(Bulkhead, TimeoutOnAutoAdvancingClockCostsNoRealTime) {
  VirtualClock clock;
  clock.set_auto_advance(true);
  Bulkhead b(1, seconds(120), clock);
  Slot held = b.acquire().value();
  const Instant start = clock.now();
  const auto real_start = std::chrono::steady_clock::now();
  Result<Slot> r = b.acquire();
  EXPECT_EQ(r.status().code(), Code::kBulkheadFull);
  EXPECT_EQ(clock.now() - start, seconds(120));
  // A two-minute wait: done in less than half of it in real time, it took none, on any machine.
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, seconds(60));
}

TEST(Bulkhead, CallDeadlineShortensTheWait) {
  VirtualClock clock;
  clock.set_auto_advance(true);
  Bulkhead b(1, milliseconds(500), clock);
  Slot held = b.acquire().value();
  const Instant start = clock.now();
  Result<Slot> r = b.acquire(start + milliseconds(120));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kTimeout);
  EXPECT_EQ(r.status().message(),
            "deadline passed waiting for a bulkhead slot: 1 call in flight, none freed within 120ms");
  EXPECT_EQ(clock.now() - start, milliseconds(120));
  // A deadline already past: no wait at all.
  EXPECT_EQ(b.acquire(clock.now() - milliseconds(1)).status().code(), Code::kTimeout);
  // A deadline after the wait: the wait decides.
  EXPECT_EQ(b.acquire(clock.now() + seconds(10)).status().code(), Code::kBulkheadFull);
  // A free slot is granted whatever the deadline: the call's deadline is the caller's to check.
  held.release();
  EXPECT_TRUE(b.acquire(clock.now() - seconds(1)).ok());
}

TEST(Bulkhead, FifoHandOff) {
  VirtualClock clock;
  Bulkhead b(1, seconds(10), clock);
  Slot held = b.acquire().value();
  std::vector<int> order;
  std::mutex order_mu;
  auto worker = [&](int id) {
    Result<Slot> r = b.acquire();
    ASSERT_TRUE(r.ok());
    std::lock_guard<std::mutex> lock(order_mu);
    order.push_back(id);
  };  // the slot goes back as r dies, to the next in line
  std::vector<std::thread> threads;
  for (int id = 0; id < 4; ++id) {
    threads.emplace_back(worker, id);
    ASSERT_TRUE(clock.wait_for_sleepers(static_cast<size_t>(id) + 1));  // queued in this order
  }
  EXPECT_EQ(b.waiting(), 4u);
  held.release();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(b.in_flight(), 0u);
}

TEST(Bulkhead, NewcomerQueuesBehindWaiters) {
  VirtualClock clock;
  Bulkhead b(2, seconds(10), clock);
  Slot one = b.acquire().value();
  Slot two = b.acquire().value();
  Caller first(b);
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  one.release();  // handed to `first` inside release(), before its thread even runs
  EXPECT_EQ(b.in_flight(), 2u);
  EXPECT_EQ(b.waiting(), 0u);
  // So a newcomer finds no slot free: with a deadline of now it is turned away rather than overtaking.
  EXPECT_EQ(b.acquire(clock.now()).status().code(), Code::kTimeout);
  first.join();
  EXPECT_TRUE(first.got_slot());
}

TEST(Bulkhead, CancelWhileWaiting) {
  VirtualClock clock;
  Bulkhead b(1, seconds(10), clock);
  Slot held = b.acquire().value();
  CancelToken cancel;
  Caller waiter(b, Instant::max(), &cancel);
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  const Instant before = clock.now();
  cancel.cancel();
  waiter.join();
  EXPECT_FALSE(waiter.got_slot());
  EXPECT_EQ(waiter.code(), Code::kCancelled);
  EXPECT_EQ(clock.now(), before);
  EXPECT_EQ(b.waiting(), 0u);
  held.release();
  EXPECT_EQ(b.in_flight(), 0u);  // not handed to the cancelled waiter
}

TEST(Bulkhead, AlreadyCancelledIsRefusedEvenWithASlotFree) {
  VirtualClock clock;
  Bulkhead b(1, seconds(10), clock);
  CancelToken cancel;
  cancel.cancel();
  cancel.cancel();  // idempotent
  EXPECT_EQ(b.acquire(Instant::max(), &cancel).status().code(), Code::kCancelled);
  EXPECT_EQ(b.in_flight(), 0u);
}

TEST(Bulkhead, CancelOfOneWaiterLeavesTheOthersQueued) {
  VirtualClock clock;
  Bulkhead b(1, seconds(10), clock);
  Slot held = b.acquire().value();
  CancelToken cancel_first;
  Caller first(b, Instant::max(), &cancel_first);
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  Caller second(b);
  ASSERT_TRUE(clock.wait_for_sleepers(2));
  cancel_first.cancel();
  first.join();
  EXPECT_EQ(first.code(), Code::kCancelled);
  EXPECT_EQ(b.waiting(), 1u);
  held.release();
  second.join();
  EXPECT_TRUE(second.got_slot());
}

TEST(Bulkhead, CancelRacingAHandOffNeverLeaksTheSlot) {
  for (int i = 0; i < 200; ++i) {
    VirtualClock clock;
    Bulkhead b(1, seconds(10), clock);
    Slot held = b.acquire().value();
    CancelToken cancel;
    Caller waiter(b, Instant::max(), &cancel);
    ASSERT_TRUE(clock.wait_for_sleepers(1));
    std::thread canceller([&] { cancel.cancel(); });
    held.release();
    canceller.join();
    waiter.join();
    // Either it got the slot before the cancel, or the slot went back: never both, never lost.
    EXPECT_EQ(b.in_flight(), waiter.got_slot() ? 1u : 0u);
    waiter.slot().release();
    EXPECT_EQ(b.in_flight(), 0u);
    EXPECT_EQ(b.waiting(), 0u);
  }
}

TEST(Bulkhead, TimeoutRacingAHandOffNeverLeaksTheSlot) {
  for (int i = 0; i < 200; ++i) {
    VirtualClock clock;
    Bulkhead b(1, milliseconds(500), clock);
    Slot held = b.acquire().value();
    Caller waiter(b);
    ASSERT_TRUE(clock.wait_for_sleepers(1));
    clock.advance(milliseconds(500));  // the waiter is due ...
    held.release();                    // ... and handed the slot at the same moment
    waiter.join();
    if (waiter.got_slot()) {
      EXPECT_EQ(b.in_flight(), 1u);
    } else {
      EXPECT_EQ(waiter.code(), Code::kBulkheadFull);
      EXPECT_EQ(b.in_flight(), 0u);
    }
    waiter.slot().release();
    EXPECT_EQ(b.in_flight(), 0u);
    EXPECT_EQ(b.waiting(), 0u);
  }
}

TEST(Bulkhead, RealClockWaitsToo) {
  Bulkhead b(1, milliseconds(5), RealClock::instance());
  Slot held = b.acquire().value();
  EXPECT_EQ(b.acquire().status().code(), Code::kBulkheadFull);
  held.release();
  EXPECT_TRUE(b.acquire().ok());
}

// 8 threads × 2 000 acquire/release through 3 slots: never more than 3 at once, and every count exact at the
// end. The virtual clock never moves, so no waiter times out: every acquire must succeed by hand-off.
TEST(Bulkhead, StressCountsAreExact) {
  VirtualClock clock;
  constexpr uint32_t kLimit = 3;
  constexpr int kThreads = 8;
  constexpr int kRounds = 2000;
  Bulkhead b(kLimit, seconds(1), clock);
  std::atomic<int> inside{0};
  std::atomic<int> peak{0};
  std::atomic<int> granted{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        Result<Slot> r = b.acquire();
        if (!r.ok()) {
          refused.fetch_add(1);
          continue;
        }
        granted.fetch_add(1);
        const int now_inside = inside.fetch_add(1) + 1;
        int p = peak.load();
        while (now_inside > p && !peak.compare_exchange_weak(p, now_inside)) {
        }
        if (i % 64 == 0) std::this_thread::yield();
        inside.fetch_sub(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(granted.load(), kThreads * kRounds);
  EXPECT_EQ(refused.load(), 0);
  EXPECT_LE(peak.load(), static_cast<int>(kLimit));
  EXPECT_EQ(b.in_flight(), 0u);
  EXPECT_EQ(b.waiting(), 0u);
}

// The same with wait 0: callers are turned away, but a slot is never lost or doubled.
TEST(Bulkhead, StressWithFailFastCountsAreExact) {
  VirtualClock clock;
  constexpr uint32_t kLimit = 2;
  constexpr int kThreads = 8;
  constexpr int kRounds = 2000;
  Bulkhead b(kLimit, Duration::zero(), clock);
  std::atomic<int> inside{0};
  std::atomic<int> over_limit{0};
  std::atomic<int> granted{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        Result<Slot> r = b.acquire();
        if (!r.ok()) {
          EXPECT_EQ(r.status().code(), Code::kBulkheadFull);
          refused.fetch_add(1);
          continue;
        }
        granted.fetch_add(1);
        if (inside.fetch_add(1) + 1 > static_cast<int>(kLimit)) over_limit.fetch_add(1);
        std::this_thread::yield();
        inside.fetch_sub(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(granted.load() + refused.load(), kThreads * kRounds);
  EXPECT_GT(granted.load(), 0);
  EXPECT_EQ(over_limit.load(), 0);
  EXPECT_EQ(b.in_flight(), 0u);
  EXPECT_EQ(b.waiting(), 0u);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::bulkhead
