#include "retry/latency_tracker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "retry/budget.h"
#include "testing/virtual_clock.h"

namespace humus::retry {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::VirtualClock;

TEST(LatencyTracker, BucketsAreNineInAHundredWideAndHoldTheirUpperEdge) {
  for (const Duration d : {Duration(microseconds(1)), Duration(microseconds(37)), Duration(milliseconds(10)),
                           Duration(milliseconds(250)), Duration(seconds(3))}) {
    const int b = LatencyTracker::bucket_of(d);
    EXPECT_GE(LatencyTracker::upper_edge(b), d - Duration(1)) << d.count();
    if (b > 0) {
      EXPECT_LT(LatencyTracker::upper_edge(b - 1), d) << d.count();
    }
    EXPECT_LE(LatencyTracker::upper_edge(b), d * 1.091) << d.count();
  }
  EXPECT_EQ(LatencyTracker::bucket_of(Duration::zero()), 0);
  EXPECT_EQ(LatencyTracker::bucket_of(std::chrono::hours(100)), LatencyTracker::kBuckets - 1);
}

TEST(LatencyTracker, NoPercentileBeforeTwentySamples) {
  VirtualClock clock;
  LatencyTracker t(clock);
  for (int i = 0; i < LatencyTracker::kMinSamples - 1; ++i) t.record(milliseconds(10));
  EXPECT_FALSE(t.percentile(95).has_value());
  t.record(milliseconds(10));
  ASSERT_TRUE(t.percentile(95).has_value());
  EXPECT_EQ(t.samples(), LatencyTracker::kMinSamples);
}

TEST(LatencyTracker, PercentileOfTwoPercentSlow) {
  VirtualClock clock;
  LatencyTracker t(clock);
  for (int i = 0; i < 98; ++i) t.record(milliseconds(10));
  for (int i = 0; i < 2; ++i) t.record(milliseconds(200));
  const Duration p95 = *t.percentile(95);
  EXPECT_GE(p95, milliseconds(10));
  EXPECT_LT(p95, milliseconds(11));  // within one 9 % bucket of the fast answers
  const Duration p99 = *t.percentile(99);
  EXPECT_GE(p99, milliseconds(200));  // rank 99 of 100 is a slow one
  EXPECT_LT(p99, milliseconds(219));
  EXPECT_EQ(*t.percentile(98), p95);  // rank 98: the last fast one
}

TEST(LatencyTracker, ForgetsSamplesOlderThanTheWindow) {
  VirtualClock clock;
  LatencyTracker t(clock, seconds(30));  // slices of 10 s
  for (int i = 0; i < 30; ++i) t.record(milliseconds(500));
  clock.advance(seconds(15));
  for (int i = 0; i < 30; ++i) t.record(milliseconds(5));
  EXPECT_EQ(t.samples(), 60);
  EXPECT_GE(*t.percentile(95), milliseconds(500));
  clock.advance(seconds(20));  // 35 s after the first: their slice is gone, the second's is 20 s old
  EXPECT_EQ(t.samples(), 30);
  EXPECT_LT(*t.percentile(95), milliseconds(6));
  clock.advance(seconds(20));
  EXPECT_EQ(t.samples(), 0);
  EXPECT_FALSE(t.percentile(50).has_value());
}

TEST(LatencyTracker, ConcurrentRecordsAreAllCounted) {
  VirtualClock clock;
  LatencyTracker t(clock);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&t, i] {
      for (int n = 0; n < 1000; ++n) {
        t.record(milliseconds(1 + i));
        if (n % 100 == 0) (void)t.percentile(95);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(t.samples(), 4000);
}

TEST(TokenBucketBudget, HedgesOnlyWhileMoreThanHalfRemainsAndTakesOneToken) {
  TokenBucketBudget budget(4, 0.5);
  EXPECT_TRUE(budget.try_hedge());   // 4 -> 3
  EXPECT_TRUE(budget.try_hedge());   // 3 -> 2
  EXPECT_FALSE(budget.try_hedge());  // 2 is half: refused, nothing taken
  EXPECT_EQ(budget.tokens(), 2);
  budget.on_success();  // 2.5
  EXPECT_TRUE(budget.try_hedge());  // 2.5 -> 1.5
  EXPECT_EQ(budget.tokens(), 1.5);
}

TEST(RatioBudget, HedgeWithdrawsARetry) {
  VirtualClock clock;
  RatioBudget budget(clock, 0.0, 0.1, seconds(10));  // a floor of 1 retry per window
  EXPECT_TRUE(budget.try_hedge());
  EXPECT_FALSE(budget.try_hedge());
  EXPECT_FALSE(budget.try_retry());
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::retry
