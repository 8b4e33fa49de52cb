// The slow-call rule (docs/breaker.md §9.3a): a result the caller says was slow is counted slow besides its
// outcome, in the window too, and the built-in policy opens on a slow share of the window when slow_call_rate is
// set. (Which attempts are slow, against breaker.slow_call_duration, is measured by the client: the vectors
// breaker_slow_calls_* and body_held_slow_to_its_end pin it.)
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "breaker/breaker.h"
#include "breaker/policy.h"
#include "testing/virtual_clock.h"

namespace humus::breaker {
namespace {
namespace HUMUS_UNITY_ID {

constexpr bool kSlow = true;
constexpr bool kFast = false;

class SlowCallTest : public ::testing::Test {
 protected:
  void make(std::optional<double> slow_call_rate, uint32_t min_results = 4) {
    Breaker::Options options;
    options.window = 4;
    DefaultPolicyParams params;
    params.min_results = min_results;
    params.slow_call_rate = slow_call_rate;
    breaker_ = std::make_unique<Breaker>(options, make_default_policy(params), clock_);
  }

  void result(Outcome outcome, bool slow) {
    const Admission a = breaker_->admit();
    ASSERT_TRUE(a.admitted);
    ASSERT_TRUE(breaker_->record(a.permit, outcome, nullptr, slow).ok());
  }

  testing::VirtualClock clock_;
  std::unique_ptr<Breaker> breaker_;
};

TEST_F(SlowCallTest, SuccessesAndFailuresMayBothBeSlow) {
  make(std::nullopt);
  result(Outcome::kSuccess, kFast);
  result(Outcome::kSuccess, kSlow);
  result(Outcome::kFailure, kSlow);
  const Counts c = breaker_->counts();
  EXPECT_EQ(c.slow_results, 2u);
  EXPECT_EQ(c.window_slow, 2u);
  EXPECT_EQ(c.successes, 2u);
  EXPECT_EQ(c.failures, 1u);
  EXPECT_EQ(c.window_failures, 1u);
}

TEST_F(SlowCallTest, IgnoredResultsAreNotSlow) {
  make(0.5);
  for (int i = 0; i < 8; ++i) result(Outcome::kIgnored, kSlow);
  EXPECT_EQ(breaker_->state(), State::kClosed);
  EXPECT_EQ(breaker_->counts().slow_results, 0u);
}

TEST_F(SlowCallTest, SlowCountedButNoRateOpensNothing) {
  make(std::nullopt);
  for (int i = 0; i < 8; ++i) result(Outcome::kSuccess, kSlow);
  EXPECT_EQ(breaker_->state(), State::kClosed);
  EXPECT_EQ(breaker_->counts().slow_results, 8u);
  EXPECT_EQ(breaker_->counts().window_slow, 4u);  // the window holds 4
}

TEST_F(SlowCallTest, OpensWhenTheSlowShareReachesTheRate) {
  make(0.5);
  result(Outcome::kSuccess, kSlow);
  result(Outcome::kSuccess, kFast);
  result(Outcome::kSuccess, kFast);
  EXPECT_EQ(breaker_->state(), State::kClosed);  // 3 results: fewer than min_results
  result(Outcome::kSuccess, kSlow);
  EXPECT_EQ(breaker_->state(), State::kOpen);    // 2 of 4 slow: the rate reached
}

TEST_F(SlowCallTest, SlowResultsLeavingTheWindowAreForgotten) {
  make(0.75);
  result(Outcome::kSuccess, kSlow);
  result(Outcome::kSuccess, kSlow);
  result(Outcome::kSuccess, kFast);
  result(Outcome::kSuccess, kFast);  // 2 of 4: below 0.75
  result(Outcome::kSuccess, kSlow);  // the first slow one leaves: still 2 of 4
  EXPECT_EQ(breaker_->counts().window_slow, 2u);
  EXPECT_EQ(breaker_->counts().slow_results, 3u);
  EXPECT_EQ(breaker_->state(), State::kClosed);
  result(Outcome::kSuccess, kSlow);  // a slow one replaces a slow one: 2 of 4
  EXPECT_EQ(breaker_->state(), State::kClosed);
  result(Outcome::kSuccess, kSlow);  // a fast one leaves: 3 of 4
  EXPECT_EQ(breaker_->state(), State::kOpen);
}

TEST_F(SlowCallTest, ASlowProbeReopensWhenTheRuleIsOn) {
  make(0.5);
  for (int i = 0; i < 4; ++i) result(Outcome::kSuccess, kSlow);
  ASSERT_EQ(breaker_->state(), State::kOpen);
  clock_.advance(Breaker::Options{}.open_for);
  ASSERT_EQ(breaker_->state(), State::kHalfOpen);
  result(Outcome::kSuccess, kSlow);
  EXPECT_EQ(breaker_->state(), State::kOpen);
}

TEST_F(SlowCallTest, ASlowProbeOnlyCountsWhenTheRuleIsOff) {
  make(std::nullopt, 1);
  result(Outcome::kFailure, kFast);  // min_results 1, failure_rate 0.5: opens
  ASSERT_EQ(breaker_->state(), State::kOpen);
  clock_.advance(Breaker::Options{}.open_for);
  result(Outcome::kSuccess, kSlow);
  EXPECT_EQ(breaker_->state(), State::kHalfOpen);
  EXPECT_EQ(breaker_->counts().slow_results, 1u);
  EXPECT_EQ(breaker_->counts().window_slow, 0u);  // half-open keeps no window
}

TEST(SlowCallPolicy, TheRateNeedsMinResults) {
  DefaultPolicyParams params;
  params.slow_call_rate = 1.0;
  const auto policy = make_default_policy(params);
  Counts c;
  c.window_results = 19;
  c.window_slow = 19;
  EXPECT_FALSE(*policy->trip(c));
  c.window_results = 20;
  c.window_slow = 19;
  EXPECT_FALSE(*policy->trip(c));
  c.window_slow = 20;
  EXPECT_TRUE(*policy->trip(c));
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::breaker
