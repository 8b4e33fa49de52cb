#include "retry/decision.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "testing/virtual_clock.h"

namespace humus::retry {
namespace {
namespace HUMUS_UNITY_ID {

using classify::Classification;
using classify::RetryVerdict;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::VirtualClock;

class UnlimitedBudget final : public Budget {
 public:
  void on_request() override {}
  void on_success() override {}
  Charge on_retryable() override {
    ++charges;
    return {};
  }
  bool try_withdraw(const Charge&) override { return true; }
  void refund() override {}
  double tokens() const override { return 0; }
  int charges = 0;
};

class CountingRandom final : public Random {
 public:
  explicit CountingRandom(uint64_t value = 0) : value_(value) {}
  uint64_t next() override {
    ++draws;
    return value_;
  }
  int draws = 0;

 private:
  uint64_t value_;
};

constexpr uint64_t kTop = std::numeric_limits<uint64_t>::max();  // draws the cap itself

Classification retry_failure(Duration retry_after = Duration::zero()) {
  return {RetryVerdict::kAgain, breaker::Outcome::kFailure, retry_after};
}

class DecideTest : public ::testing::Test {
 protected:
  DecisionInput input(Classification c, int attempt = 1) {
    DecisionInput in;
    in.classification = c;
    in.may_send_twice = true;
    in.attempt = attempt;
    in.max_attempts = 3;
    in.now = clock_.now();
    in.deadline = clock_.now() + seconds(10);
    in.max_retry_after = seconds(2);
    return in;
  }

  VirtualClock clock_;
  Backoff backoff_{milliseconds(100), seconds(2)};
  TokenBucketBudget budget_{10, 0.1};
  CountingRandom random_{kTop};
};

TEST(DecisionName, NamesEveryDecision) {
  EXPECT_STREQ(decision_name(Decision::kDone), "done");
  EXPECT_STREQ(decision_name(Decision::kAgain), "again");
  EXPECT_STREQ(decision_name(Decision::kThrottled), "throttled");
  EXPECT_STREQ(decision_name(Decision::kExhausted), "exhausted");
  EXPECT_STREQ(decision_name(Decision::kExpired), "expired");
  EXPECT_STREQ(decision_name(Decision::kStopped), "stopped");
}

TEST_F(DecideTest, DoneIsDoneAndChargesNothing) {
  const Classification ok{RetryVerdict::kDone, breaker::Outcome::kSuccess, Duration::zero()};
  const DecisionResult r = decide(input(ok), backoff_, budget_, random_);
  EXPECT_EQ(r.decision, Decision::kDone);
  EXPECT_EQ(r.wait, Duration::zero());
  EXPECT_EQ(budget_.tokens(), 10);
  EXPECT_EQ(random_.draws, 0);
  // A 500 the classifier calls done (a failure for the breaker) is not charged either.
  const Classification bug{RetryVerdict::kDone, breaker::Outcome::kFailure, Duration::zero()};
  EXPECT_EQ(decide(input(bug), backoff_, budget_, random_).decision, Decision::kDone);
  EXPECT_EQ(budget_.tokens(), 10);
}

TEST_F(DecideTest, RatioBudgetCountsOnlyTheRetriesMade) {
  RatioBudget ratio(clock_, 0.2, 1, seconds(10));
  for (int i = 0; i < 10; ++i) ratio.on_request();
  const double before = ratio.tokens();  // 0.2 x 10 + 1 x 10 = 12
  DecisionInput unsafe = input(retry_failure());
  unsafe.may_send_twice = false;
  EXPECT_EQ(decide(unsafe, backoff_, ratio, random_).decision, Decision::kDone);
  EXPECT_EQ(decide(input(retry_failure(), 3), backoff_, ratio, random_).decision, Decision::kExhausted);
  EXPECT_DOUBLE_EQ(ratio.tokens(), before);  // neither made a retry: nothing withdrawn
  EXPECT_EQ(decide(input(retry_failure(seconds(60))), backoff_, ratio, random_).decision, Decision::kDone);
  EXPECT_DOUBLE_EQ(ratio.tokens(), before);  // withdrawn, then refunded: the server asked too long a wait
  EXPECT_EQ(decide(input(retry_failure()), backoff_, ratio, random_).decision, Decision::kAgain);
  EXPECT_DOUBLE_EQ(ratio.tokens(), before - 1);
}

TEST_F(DecideTest, AgainWaitsTheBackoffDraw) {
  const DecisionResult r = decide(input(retry_failure(), 2), backoff_, budget_, random_);
  EXPECT_EQ(r.decision, Decision::kAgain);
  EXPECT_EQ(r.wait, milliseconds(200));  // the top of attempt 2's range
  EXPECT_EQ(budget_.tokens(), 9);
  EXPECT_EQ(random_.draws, 1);
}

TEST_F(DecideTest, AnUnsafeRequestIsDoneButStillCharged) {
  DecisionInput in = input(retry_failure());
  in.may_send_twice = false;
  EXPECT_EQ(decide(in, backoff_, budget_, random_).decision, Decision::kDone);
  EXPECT_EQ(budget_.tokens(), 9);
  in.attempt = 3;  // unsafe is decided before the attempt limit
  EXPECT_EQ(decide(in, backoff_, budget_, random_).decision, Decision::kDone);
  EXPECT_EQ(budget_.tokens(), 8);
  EXPECT_EQ(random_.draws, 0);
}

TEST_F(DecideTest, ABodyTooLargeIsDoneButStillCharged) {
  DecisionInput in = input(retry_failure());
  in.body_too_large = true;
  EXPECT_EQ(decide(in, backoff_, budget_, random_).decision, Decision::kDone);
  EXPECT_EQ(budget_.tokens(), 9);
}

TEST_F(DecideTest, TheLastAttemptIsExhaustedAndStillCharged) {
  EXPECT_EQ(decide(input(retry_failure(), 3), backoff_, budget_, random_).decision, Decision::kExhausted);
  EXPECT_EQ(budget_.tokens(), 9);
  DecisionInput one = input(retry_failure(), 1);
  one.max_attempts = 1;  // retries turned off
  EXPECT_EQ(decide(one, backoff_, budget_, random_).decision, Decision::kExhausted);
  EXPECT_EQ(random_.draws, 0);
}

TEST_F(DecideTest, ARefusingBudgetThrottles) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(budget_.try_retry());  // 6 left; the next charge leaves 5
  EXPECT_EQ(decide(input(retry_failure()), backoff_, budget_, random_).decision, Decision::kThrottled);
  EXPECT_EQ(budget_.tokens(), 5);
  // Exhausted is named before throttled: the request had no attempt left anyway.
  EXPECT_EQ(decide(input(retry_failure(), 3), backoff_, budget_, random_).decision, Decision::kExhausted);
  // Throttled is named before a Retry-After that is too long.
  EXPECT_EQ(decide(input(retry_failure(seconds(30))), backoff_, budget_, random_).decision,
            Decision::kThrottled);
  EXPECT_EQ(random_.draws, 0);
}

// F69
TEST_F(DecideTest, ARetryAfterOverTheMaxReturnsTheResponse) {
  const DecisionResult r = decide(input(retry_failure(milliseconds(2001))), backoff_, budget_, random_);
  EXPECT_EQ(r.decision, Decision::kDone);
  EXPECT_EQ(budget_.tokens(), 9);
  EXPECT_EQ(random_.draws, 0);
  // Exactly the max is waited.
  const DecisionResult at = decide(input(retry_failure(seconds(2))), backoff_, budget_, random_);
  EXPECT_EQ(at.decision, Decision::kAgain);
  EXPECT_EQ(at.wait, seconds(2));
}

TEST_F(DecideTest, A429WaitsExactlyItsRetryAfter) {
  SeededRandom seeded(42);
  const Classification too_many{RetryVerdict::kAgain, breaker::Outcome::kSuccess, seconds(2)};
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const DecisionResult r = decide(input(too_many, attempt), backoff_, budget_, seeded);
    EXPECT_EQ(r.decision, Decision::kAgain);
    EXPECT_EQ(r.wait, seconds(2));  // the backoff (at most 200 ms here) is shorter
  }
}

TEST_F(DecideTest, TheWaitIsTheLongerOfBackoffAndRetryAfter) {
  const DecisionResult r = decide(input(retry_failure(milliseconds(50))), backoff_, budget_, random_);
  EXPECT_EQ(r.decision, Decision::kAgain);
  EXPECT_EQ(r.wait, milliseconds(100));
  // A negative retry_after (refused upstream) is taken as none.
  const DecisionResult neg = decide(input(retry_failure(-seconds(5))), backoff_, budget_, random_);
  EXPECT_EQ(neg.decision, Decision::kAgain);
  EXPECT_EQ(neg.wait, milliseconds(100));
}

// F68
TEST_F(DecideTest, NoWaitThatTheDeadlineCannotFinish) {
  DecisionInput in = input(retry_failure(seconds(2)));
  in.deadline = in.now + seconds(2);  // the wait would end exactly at the deadline
  DecisionResult r = decide(in, backoff_, budget_, random_);
  EXPECT_EQ(r.decision, Decision::kExpired);
  EXPECT_EQ(r.wait, Duration::zero());
  EXPECT_EQ(budget_.tokens(), 9);
  EXPECT_EQ(random_.draws, 1);

  in.deadline = in.now + seconds(2) + Duration(1);
  r = decide(in, backoff_, budget_, random_);
  EXPECT_EQ(r.decision, Decision::kAgain);
  EXPECT_EQ(r.wait, seconds(2));

  in.deadline = in.now - seconds(1);  // already past
  EXPECT_EQ(decide(in, backoff_, budget_, random_).decision, Decision::kExpired);
  in.deadline = Instant::max();  // no overflow on a far deadline
  EXPECT_EQ(decide(in, backoff_, budget_, random_).decision, Decision::kAgain);
}

// --- The call loop, simulated: each call's attempts until decide() says anything but again.

struct LoopTotals {
  int attempts = 0;
  int retries = 0;  // attempts after the first
  int successes = 0;
};

// `fails(i)` says whether the i-th attempt overall is a 503 (retry, breaker failure) or a 200.
template <typename Fails>
LoopTotals run_calls(int calls, Budget& budget, VirtualClock& clock, Duration between_calls, Fails fails,
                     std::string* decisions = nullptr) {
  const Backoff backoff(milliseconds(100), seconds(2));
  SeededRandom random(99);
  LoopTotals totals;
  for (int call = 0; call < calls; ++call) {
    budget.on_request();
    const Instant deadline = clock.now() + seconds(10);
    for (int attempt = 1;; ++attempt) {
      ++totals.attempts;
      if (attempt > 1) ++totals.retries;
      DecisionInput in;
      if (fails(totals.attempts)) {
        in.classification = retry_failure();
      } else {
        in.classification = {RetryVerdict::kDone, breaker::Outcome::kSuccess, Duration::zero()};
        budget.on_success();
        ++totals.successes;
      }
      in.may_send_twice = true;
      in.attempt = attempt;
      in.max_attempts = 3;
      in.now = clock.now();
      in.deadline = deadline;
      in.max_retry_after = seconds(2);
      const DecisionResult r = decide(in, backoff, budget, random);
      if (decisions != nullptr) *decisions += std::string(decision_name(r.decision)) + " ";
      if (r.decision != Decision::kAgain) break;
      clock.advance(r.wait);
    }
    if (decisions != nullptr) *decisions += "| ";
    clock.advance(between_calls);
  }
  return totals;
}

TEST(RetryLoop, TokenBucketMakesTwentyThreeAttemptsForTwentyCallsInAnOutage) {
  VirtualClock clock;
  TokenBucketBudget budget(10, 0.1);
  std::string decisions;
  const LoopTotals with = run_calls(
      20, budget, clock, milliseconds(10), [](int) { return true; }, &decisions);
  EXPECT_EQ(with.attempts, 23);
  std::string expected = "again again exhausted | again throttled | ";
  for (int i = 0; i < 18; ++i) expected += "throttled | ";
  EXPECT_EQ(decisions, expected);
  EXPECT_EQ(budget.tokens(), 0);

  UnlimitedBudget unlimited;
  const LoopTotals without = run_calls(20, unlimited, clock, milliseconds(10), [](int) { return true; });
  EXPECT_EQ(without.attempts, 60);
  EXPECT_EQ(unlimited.charges, 60);  // the last attempt of each call is charged too
}

// Whether the i-th attempt overall fails, with probability p, the same for every run.
auto failing(double p) {
  return [p](int i) { return SeededRandom(static_cast<uint64_t>(i)).uniform01() < p; };
}

TEST(RetryLoop, TokenBucketRetriesStayWithinATenthOfSuccesses) {
  // Every allowed retry costs a token and only successes (0.1 each) refill past the 5 spare tokens, so
  // however the dependency fails, retries <= 0.1 × successes + 5.
  const int calls = 10000;
  for (double p : {0.02, 0.05, 0.1, 0.3, 0.6, 1.0}) {
    VirtualClock clock;
    TokenBucketBudget budget(10, 0.1);
    const LoopTotals t = run_calls(calls, budget, clock, milliseconds(10), failing(p));
    EXPECT_LE(t.retries, static_cast<int>(0.1 * t.successes) + 5) << "p=" << p;
    EXPECT_LE(t.retries, calls / 10 + 5) << "p=" << p;

    UnlimitedBudget unlimited;
    const LoopTotals u = run_calls(calls, unlimited, clock, milliseconds(10), failing(p));
    EXPECT_GE(u.retries, static_cast<int>(p * calls * 0.9)) << "p=" << p;  // what the budget saves
    if (p <= 0.05) {
      // A dependency failing now and then keeps the bucket near full: its retries are not refused.
      EXPECT_GE(t.retries, u.retries * 95 / 100) << "p=" << p;
    }
  }
}

// F80
TEST(RetryLoop, RatioBudgetOutageAddsATenthNotDouble) {
  // 1000 calls over 100 s, every attempt a 503: retries stay within a tenth of the requests.
  VirtualClock clock;
  RatioBudget budget(clock, 0.1, 0, seconds(10));
  const LoopTotals t = run_calls(1000, budget, clock, milliseconds(100), [](int) { return true; });
  EXPECT_LE(t.retries, 100);
  EXPECT_GE(t.retries, 80);  // the share is used, not starved
  EXPECT_LE(t.attempts, 1100);
}

TEST(RetryLoop, RatioBudgetOutageWithTheFloorAddsTheShareAndTheFloor) {
  VirtualClock clock;
  RatioBudget budget(clock, 0.2, 1, seconds(10));
  const int calls = 1000;
  const Instant start = clock.now();
  const LoopTotals t = run_calls(calls, budget, clock, milliseconds(100), [](int) { return true; });
  // At most 0.2 of the requests plus 1 per second of the run (the floor of each window), with one window
  // of slack: the first window's floor is there from the start.
  const double seconds_run = std::chrono::duration<double>(clock.now() - start).count() + 10;
  EXPECT_LE(t.retries, static_cast<int>(0.2 * calls + 1 * seconds_run));
  EXPECT_GE(t.retries, static_cast<int>(0.2 * calls));  // and the share is actually granted
  EXPECT_LT(t.attempts, calls * 2);  // far from the 3000 of an unbudgeted outage
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::retry
