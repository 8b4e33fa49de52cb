#include "bulkhead/limit.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "bulkhead/bulkhead.h"
#include "testing/virtual_clock.h"

namespace humus::bulkhead {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::VirtualClock;

Sample ok(int ms, uint32_t in_flight) { return Sample{milliseconds(ms), in_flight, false}; }
Sample drop(int ms, uint32_t in_flight) { return Sample{milliseconds(ms), in_flight, true}; }

// One window's worth of the same sample; the limit after it.
uint32_t window(Limit& l, const Sample& s) {
  for (int i = 1; i < kWindowSamples; ++i) EXPECT_EQ(l.on_sample(s), l.limit());  // nothing moves mid-window
  return l.on_sample(s);
}

// F170
TEST(AimdLimit, AddsOneWhileInUseAndCutsATenthOnADrop) {
  Aimd a({10, 4, 12});
  EXPECT_EQ(a.limit(), 10u);
  for (int i = 0; i < kWindowSamples - 1; ++i) EXPECT_EQ(a.on_sample(ok(50, 5)), 10u);
  EXPECT_EQ(a.on_sample(ok(50, 5)), 11u);   // the window's 5 · 2 >= 10: in use
  EXPECT_EQ(window(a, ok(50, 5)), 11u);     // 10 < 11: not in use, nothing learnt
  EXPECT_EQ(window(a, ok(50, 11)), 12u);
  EXPECT_EQ(window(a, ok(50, 12)), 12u);    // at max
  EXPECT_EQ(window(a, drop(50, 12)), 10u);  // floor(12 · 0.9)
  // One drop makes its window a cut, however many calls in it went well, and whatever was in flight.
  for (int i = 0; i < kWindowSamples - 1; ++i) a.on_sample(ok(50, 12));
  EXPECT_EQ(a.on_sample(drop(50, 1)), 9u);
  for (int i = 0; i < 10; ++i) window(a, drop(50, 1));
  EXPECT_EQ(a.limit(), 4u);  // never below min
}

TEST(AimdLimit, InitialIsClampedIntoTheBounds) {
  EXPECT_EQ(Aimd({1, 4, 12}).limit(), 4u);
  EXPECT_EQ(Aimd({50, 4, 12}).limit(), 12u);
}

// F171
TEST(Gradient2Limit, StableLatencyGrowsTheLimitARisingOneShrinksItAndItRecovers) {
  Gradient2 g({20, 4, 100});
  auto feed = [&](int windows, int ms) {
    for (int i = 0; i < windows; ++i) window(g, ok(ms, g.limit()));
  };
  feed(20, 100);  // steady: gradient 1, + kSmoothing · kQueueSize per window
  const uint32_t grown = g.limit();
  EXPECT_EQ(grown, 36u);  // 20 + 20 · 0.8
  feed(30, 400);  // latency ×4: short passes 1.5 · long, the gradient falls towards 0.5
  const uint32_t shrunk = g.limit();
  EXPECT_EQ(shrunk, 9u);
  feed(30, 100);  // latency back: the long average decays back, the limit grows again
  EXPECT_EQ(g.limit(), 33u);
}

TEST(Gradient2Limit, UnusedLimitDoesNotGrowButFalls) {
  Gradient2 g({20, 4, 100});
  EXPECT_EQ(window(g, ok(100, 3)), 20u);  // 3 · 2 < 20: the gradient of 1 would raise it, but it is not in use
  EXPECT_DOUBLE_EQ(g.short_rtt(), 0.1);
  EXPECT_DOUBLE_EQ(g.long_rtt(), 0.1);
  // Latency ×3 with the limit still not in use: the gradient of 1.5 · 0.1007 / 0.3 ≈ 0.5 lowers it to
  // 0.8 · 20 + 0.2 · (20 · 0.503 + 4) = 18.8.
  EXPECT_EQ(window(g, ok(300, 3)), 18u);
  EXPECT_DOUBLE_EQ(g.short_rtt(), 0.3);
  EXPECT_DOUBLE_EQ(g.long_rtt(), 0.1 + 2.0 / 601 * 0.2);
}

TEST(Gradient2Limit, ZeroLatencyKeepsTheGradientAtOne) {
  Gradient2 g({10, 4, 100});
  EXPECT_EQ(window(g, ok(0, 10)), 10u);  // 10 · 0.8 + (10 + 4) · 0.2 = 10.8
  EXPECT_EQ(window(g, ok(0, 10)), 11u);
}

TEST(Gradient2Limit, NeverLeavesItsBounds) {
  Gradient2 g({10, 9, 12});
  for (int i = 0; i < 50; ++i) window(g, ok(10, g.limit()));
  EXPECT_EQ(g.limit(), 12u);
  // 500 times the latency: the gradient is 0.5, where estimate · 0.5 + 4 settles at 8, below min.
  for (int i = 0; i < 100; ++i) window(g, drop(5000, g.limit()));
  EXPECT_EQ(g.limit(), 9u);
}

// A limit that moves as the test says, to see the bulkhead follow it.
class ScriptedLimit final : public Limit {
 public:
  ScriptedLimit(uint32_t first, std::vector<uint32_t> next) : limit_(first), next_(std::move(next)) {}
  uint32_t limit() const override { return limit_; }
  uint32_t on_sample(const Sample& s) override {
    samples.push_back(s);
    if (!next_.empty()) {
      limit_ = next_.front();
      next_.erase(next_.begin());
    }
    return limit_;
  }
  std::vector<Sample> samples;

 private:
  uint32_t limit_;
  std::vector<uint32_t> next_;
};

// F172: the bulkhead's slots follow its limit: a raise grants queued waiters, a cut revokes nothing.
TEST(AdaptiveBulkhead, RaisedLimitGrantsWaitersLoweredLimitRevokesNothing) {
  VirtualClock clock;
  auto scripted = std::make_unique<ScriptedLimit>(2, std::vector<uint32_t>{3, 2});
  ScriptedLimit* limit = scripted.get();
  Bulkhead b(2, seconds(10), clock, nullptr, std::move(scripted));
  EXPECT_TRUE(b.adaptive());
  EXPECT_EQ(b.limit(), 2u);
  Slot one = b.acquire().value();
  Slot two = b.acquire().value();
  std::array<std::optional<Result<Slot>>, 3> got;
  std::vector<std::thread> waiters;
  for (size_t i = 0; i < 3; ++i) {
    waiters.emplace_back([&, i] { got[i].emplace(b.acquire()); });
    ASSERT_TRUE(clock.wait_for_sleepers(i + 1));
  }
  EXPECT_EQ(b.waiting(), 3u);
  clock.advance(milliseconds(100));
  one.release(Outcome::kDone);  // limit 3: the freed slot and the new one go to the two oldest waiters
  EXPECT_EQ(b.limit(), 3u);
  EXPECT_EQ(b.in_flight(), 3u);
  EXPECT_EQ(b.waiting(), 1u);
  waiters[0].join();
  waiters[1].join();
  ASSERT_TRUE(got[0]->ok());
  ASSERT_TRUE(got[1]->ok());

  two.release(Outcome::kDropped);  // limit 2: the cut takes no slot back ...
  EXPECT_EQ(b.limit(), 2u);
  EXPECT_EQ(b.in_flight(), 2u);  // ... and the waiter still waits: 2 held, limit 2
  EXPECT_EQ(b.waiting(), 1u);
  got[0]->value().release(Outcome::kIgnored);  // no sample: the limit stays, the freed slot goes to the waiter
  EXPECT_EQ(b.limit(), 2u);
  waiters[2].join();
  ASSERT_TRUE(got[2]->ok());
  EXPECT_EQ(b.in_flight(), 2u);
  got[1]->value().release(Outcome::kIgnored);
  got[2]->value().release(Outcome::kIgnored);
  EXPECT_EQ(b.in_flight(), 0u);
  // Two samples, with what was in flight as each slot went back (itself included); the ignored ones none.
  ASSERT_EQ(limit->samples.size(), 2u);
  EXPECT_EQ(limit->samples[0].latency, milliseconds(100));
  EXPECT_EQ(limit->samples[0].in_flight, 2u);
  EXPECT_FALSE(limit->samples[0].dropped);
  EXPECT_EQ(limit->samples[1].in_flight, 3u);
  EXPECT_TRUE(limit->samples[1].dropped);
}

TEST(AdaptiveBulkhead, SampleIsTheTimeTheSlotWasHeld) {
  VirtualClock clock;
  auto scripted = std::make_unique<ScriptedLimit>(2, std::vector<uint32_t>{});
  ScriptedLimit* seen = scripted.get();
  Bulkhead b(2, seconds(1), clock, nullptr, std::move(scripted));
  Slot s = b.acquire().value();
  clock.advance(milliseconds(250));
  Slot moved = std::move(s);  // the grant time goes with the slot
  moved.release(Outcome::kDone);
  ASSERT_EQ(seen->samples.size(), 1u);
  EXPECT_EQ(seen->samples[0].latency, milliseconds(250));
}

// F172
TEST(AdaptiveBulkhead, AsyncWaiterIsGrantedByARaise) {
  VirtualClock clock;
  Bulkhead b(1, seconds(1), clock, nullptr, std::make_unique<ScriptedLimit>(1, std::vector<uint32_t>{2}));
  Slot held = b.acquire().value();
  int granted = 0;
  Bulkhead::AsyncWaiter w([](void* arg) { ++*static_cast<int*>(arg); }, &granted);
  EXPECT_FALSE(b.acquire_or_queue(w).has_value());
  held.release(Outcome::kDone);  // limit 2
  EXPECT_EQ(granted, 1);
  EXPECT_EQ(b.limit(), 2u);
  Slot taken = b.take(w);
  EXPECT_EQ(b.in_flight(), 1u);
}

// F172: many threads taking and giving back slots while an AIMD limit moves under them: the calls in flight never
// exceed the highest limit, every slot comes back, and nobody waits forever.
TEST(AdaptiveBulkhead, StressWithAMovingLimitCountsAreExact) {
  VirtualClock clock;
  Bulkhead b(4, seconds(3600), clock, nullptr, std::make_unique<Aimd>(LimitBounds{4, 2, 8}));
  std::atomic<int> holding{0};
  std::atomic<int> most{0};
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        Result<Slot> r = b.acquire();
        ASSERT_TRUE(r.ok()) << r.status().message();
        ++granted;
        const int now = ++holding;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        --holding;
        // Every seventh call of a thread is dropped: the limit goes up and down all along.
        r.value().release((i + t) % 7 == 0 ? Outcome::kDropped : Outcome::kDone);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(granted.load(), 8 * 300);
  EXPECT_LE(most.load(), 8);
  EXPECT_EQ(b.in_flight(), 0u);
  EXPECT_EQ(b.waiting(), 0u);
  EXPECT_GE(b.limit(), 2u);
  EXPECT_LE(b.limit(), 8u);
}

TEST(FixedBulkhead, LimitIsMaxConcurrentWhateverTheOutcomes) {
  VirtualClock clock;
  Bulkhead b(3, seconds(1), clock);
  EXPECT_FALSE(b.adaptive());
  b.acquire().value().release(Outcome::kDropped);
  EXPECT_EQ(b.limit(), 3u);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::bulkhead
