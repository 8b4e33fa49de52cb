#include "retry/budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "testing/virtual_clock.h"

namespace humus::retry {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::VirtualClock;

// --- Token bucket

TEST(TokenBucketBudget, StartsFullAndAllowsOnlyWhileMoreThanHalfRemains) {
  TokenBucketBudget budget(10, 0.1);
  EXPECT_EQ(budget.tokens(), 10);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(budget.try_retry()) << i;  // 9, 8, 7, 6 remain
  EXPECT_FALSE(budget.try_retry());                                  // 5: half is not more than half
  EXPECT_EQ(budget.tokens(), 5);
}

TEST(TokenBucketBudget, ChargesEvenWhenRefusingButNeverBelowZero) {
  TokenBucketBudget budget(10, 0.1);
  for (int i = 0; i < 25; ++i) (void)budget.try_retry();
  EXPECT_EQ(budget.tokens(), 0);
  EXPECT_FALSE(budget.try_retry());
  EXPECT_EQ(budget.tokens(), 0);
}

TEST(TokenBucketBudget, SuccessRefillsExactlyAndIsCappedAtFull) {
  TokenBucketBudget budget(10, 0.1);
  budget.on_success();
  EXPECT_EQ(budget.tokens(), 10);
  for (int i = 0; i < 5; ++i) (void)budget.try_retry();
  EXPECT_EQ(budget.tokens(), 5);
  for (int i = 0; i < 10; ++i) budget.on_success();
  EXPECT_EQ(budget.tokens(), 6);  // ten tenths make exactly one token
  for (int i = 0; i < 1000; ++i) budget.on_success();
  EXPECT_EQ(budget.tokens(), 10);
}

TEST(TokenBucketBudget, RecoversAfterEnoughSuccessesToClearHalf) {
  TokenBucketBudget budget(10, 0.1);
  for (int i = 0; i < 10; ++i) (void)budget.try_retry();
  ASSERT_EQ(budget.tokens(), 0);
  for (int i = 0; i < 60; ++i) budget.on_success();
  EXPECT_FALSE(budget.try_retry());  // 6.0 - 1 = 5.0: not more than half
  for (int i = 0; i < 11; ++i) budget.on_success();
  EXPECT_TRUE(budget.try_retry());  // 6.1 - 1 = 5.1
}

TEST(TokenBucketBudget, OnRequestChangesNothing) {
  TokenBucketBudget budget(4, 0.5);
  (void)budget.try_retry();
  budget.on_request();
  EXPECT_EQ(budget.tokens(), 3);
}

// --- Ratio budget

TEST(RatioBudget, AllowsItsShareOfRecentRequests) {
  VirtualClock clock;
  RatioBudget budget(clock, 0.2, 0, seconds(10));
  EXPECT_FALSE(budget.try_retry());  // no requests, no floor
  for (int i = 0; i < 100; ++i) budget.on_request();
  EXPECT_EQ(budget.tokens(), 20);
  int allowed = 0;
  for (int i = 0; i < 50; ++i) allowed += budget.try_retry() ? 1 : 0;
  EXPECT_EQ(allowed, 20);
  EXPECT_EQ(budget.tokens(), 0);
  budget.on_request();  // 101 requests: 20.2 allowed, and 20 are taken
  EXPECT_FALSE(budget.try_retry());
  for (int i = 0; i < 4; ++i) budget.on_request();  // 105: 21
  EXPECT_TRUE(budget.try_retry());
  EXPECT_FALSE(budget.try_retry());
}

TEST(RatioBudget, AQuietClientMayStillRetryThanksToTheFloor) {
  VirtualClock clock;
  RatioBudget budget(clock, 0.2, 1, seconds(10));
  // One request every 10 s: 0.2 of it is nothing, the floor of 1/s over 10 s allows 10.
  for (int round = 0; round < 3; ++round) {
    budget.on_request();
    int allowed = 0;
    for (int i = 0; i < 20; ++i) allowed += budget.try_retry() ? 1 : 0;
    EXPECT_EQ(allowed, 10) << round;
    clock.advance(seconds(10));
  }
}

TEST(RatioBudget, ForgetsRequestsAndRetriesAfterTheWindow) {
  VirtualClock clock;
  RatioBudget budget(clock, 0.5, 0, seconds(10));
  for (int i = 0; i < 10; ++i) budget.on_request();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(budget.try_retry());
  ASSERT_FALSE(budget.try_retry());

  clock.advance(milliseconds(9999));  // still within the window of the first requests
  EXPECT_FALSE(budget.try_retry());
  for (int i = 0; i < 2; ++i) budget.on_request();  // 12 requests, 6 retries allowed, 5 taken
  EXPECT_TRUE(budget.try_retry());
  EXPECT_FALSE(budget.try_retry());

  clock.advance(milliseconds(1));  // 10 s: the first slice has left the window
  EXPECT_EQ(budget.tokens(), 0);   // 2 requests (1 retry) against the later retry: none left
  clock.advance(seconds(9));       // 19 s: the later slice has gone too
  EXPECT_EQ(budget.tokens(), 0);
  EXPECT_FALSE(budget.try_retry());
  for (int i = 0; i < 4; ++i) budget.on_request();
  EXPECT_EQ(budget.tokens(), 2);
  EXPECT_TRUE(budget.try_retry());
  EXPECT_TRUE(budget.try_retry());
  EXPECT_FALSE(budget.try_retry());
}

TEST(RatioBudget, SlidesBucketByBucket) {
  VirtualClock clock;
  RatioBudget budget(clock, 1.0, 0, seconds(10));
  for (int s = 0; s < 10; ++s) {
    budget.on_request();
    clock.advance(seconds(1));
  }
  // At 10 s the request of second 0 has gone; those of seconds 1..9 remain.
  EXPECT_EQ(budget.tokens(), 9);
  clock.advance(seconds(5));
  EXPECT_EQ(budget.tokens(), 4);
  clock.advance(seconds(100));
  EXPECT_EQ(budget.tokens(), 0);
}

// --- Factory

TEST(MakeBudget, BuildsEachPolicy) {
  VirtualClock clock;
  auto bucket = make_budget(BudgetOptions::token_bucket_defaults(), clock);
  ASSERT_TRUE(bucket.ok());
  EXPECT_NE(dynamic_cast<TokenBucketBudget*>(bucket->get()), nullptr);
  EXPECT_EQ((*bucket)->tokens(), 10);

  auto ratio = make_budget(BudgetOptions::ratio_defaults(), clock);
  ASSERT_TRUE(ratio.ok());
  EXPECT_NE(dynamic_cast<RatioBudget*>(ratio->get()), nullptr);
  EXPECT_EQ((*ratio)->tokens(), 10);  // the floor: 1/s over 10 s
  for (int i = 0; i < 50; ++i) (*ratio)->on_request();
  EXPECT_EQ((*ratio)->tokens(), 20);  // + 0.2 × 50

  EXPECT_STREQ(budget_policy_name(BudgetPolicy::kTokenBucket), "token_bucket");
  EXPECT_STREQ(budget_policy_name(BudgetPolicy::kRatio), "ratio");
}

TEST(MakeBudget, RefusesEveryBadFieldAtOnce) {
  VirtualClock clock;
  BudgetOptions options;
  options.tokens = 0;
  options.ratio = 1.5;
  auto bad = make_budget(options, clock);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.status().fields(), (std::vector<std::string>{"retry_budget.tokens", "retry_budget.ratio"}));

  options = BudgetOptions::ratio_defaults();
  options.ratio = 0;
  options.min_per_second = -1;
  options.window = Duration::zero();
  options.tokens = -3;  // not the ratio policy's field
  bad = make_budget(options, clock);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.status().fields(),
      (std::vector<std::string>{"retry_budget.ratio", "retry_budget.min_per_second", "retry_budget.window"}));

  options = BudgetOptions{};
  options.ratio = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(make_budget(options, clock).ok());
  options.ratio = 1;  // the top of (0, 1] is allowed
  EXPECT_TRUE(make_budget(options, clock).ok());
}

// --- Concurrency (meaningful under TSan)

constexpr int kThreads = 8;

template <typename Fn>
void run_threads(Fn fn) {
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  std::atomic<bool> go{false};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      fn(t);
    });
  }
  go.store(true, std::memory_order_release);
  for (std::thread& th : threads) th.join();
}

TEST(TokenBucketBudgetConcurrency, NoChargeIsLost) {
  TokenBucketBudget budget(100000, 0.1);
  std::atomic<int> allowed{0};
  run_threads([&](int) {
    for (int i = 0; i < 1000; ++i) allowed.fetch_add(budget.try_retry() ? 1 : 0, std::memory_order_relaxed);
  });
  EXPECT_EQ(budget.tokens(), 92000);
  EXPECT_EQ(allowed.load(), 8000);
}

TEST(TokenBucketBudgetConcurrency, DrainingAllowsExactlyTheRetriesAboveHalf) {
  TokenBucketBudget budget(1000, 0.1);
  std::atomic<int> allowed{0};
  run_threads([&](int) {
    for (int i = 0; i < 500; ++i) allowed.fetch_add(budget.try_retry() ? 1 : 0, std::memory_order_relaxed);
  });
  // Whatever the interleaving, the charges leave 999, 998, ..., 501 (allowed) then 500 .. 0 (refused).
  EXPECT_EQ(allowed.load(), 499);
  EXPECT_EQ(budget.tokens(), 0);
}

TEST(TokenBucketBudgetConcurrency, NoRefillIsLost) {
  TokenBucketBudget budget(1000, 1.0);
  for (int i = 0; i < 1000; ++i) (void)budget.try_retry();
  ASSERT_EQ(budget.tokens(), 0);
  run_threads([&](int) {
    for (int i = 0; i < 100; ++i) budget.on_success();
  });
  EXPECT_EQ(budget.tokens(), 800);
  run_threads([&](int) {
    for (int i = 0; i < 100; ++i) budget.on_success();
  });
  EXPECT_EQ(budget.tokens(), 1000);  // capped
}

TEST(TokenBucketBudgetConcurrency, HammeringKeepsTheBalanceInBounds) {
  TokenBucketBudget budget(10, 0.1);
  std::atomic<bool> done{false};
  std::atomic<int> out_of_bounds{0};
  std::thread reader([&] {
    while (!done.load(std::memory_order_acquire)) {
      const double t = budget.tokens();
      if (t < 0 || t > 10) out_of_bounds.fetch_add(1, std::memory_order_relaxed);
    }
  });
  run_threads([&](int t) {
    SeededRandom random(static_cast<uint64_t>(t) + 1);
    for (int i = 0; i < 20000; ++i) {
      if (random.next() % 3 == 0) {
        (void)budget.try_retry();
      } else {
        budget.on_success();
      }
    }
  });
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(out_of_bounds.load(), 0);
  EXPECT_GE(budget.tokens(), 0);
  EXPECT_LE(budget.tokens(), 10);
}

TEST(RatioBudgetConcurrency, CountsEveryRequestAndCapsRetriesExactly) {
  VirtualClock clock;
  RatioBudget budget(clock, 0.2, 0, seconds(10));
  run_threads([&](int) {
    for (int i = 0; i < 1000; ++i) budget.on_request();
  });
  std::atomic<int> allowed{0};
  run_threads([&](int t) {
    for (int i = 0; i < 1000; ++i) {
      if (t == 0 && i % 100 == 0) clock.advance(milliseconds(1));  // time moves while others count
      allowed.fetch_add(budget.try_retry() ? 1 : 0, std::memory_order_relaxed);
      (void)budget.tokens();
    }
  });
  EXPECT_EQ(allowed.load(), 1600);
  EXPECT_EQ(budget.tokens(), 0);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::retry
