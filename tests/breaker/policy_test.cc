#include "breaker/policy.h"

#include <gtest/gtest.h>

#include "breaker/breaker.h"
#include "testing/virtual_clock.h"

namespace humus::breaker {
namespace {
namespace HUMUS_UNITY_ID {

Counts closed_counts(uint64_t consecutive_failures, uint32_t window_results, uint32_t window_failures) {
  Counts c;
  c.consecutive_failures = consecutive_failures;
  c.failures = consecutive_failures;
  c.window_results = window_results;
  c.window_failures = window_failures;
  return c;
}

TEST(DefaultPolicy, TripsOnTheStreakOrTheRate) {
  const auto policy = make_default_policy({});
  EXPECT_FALSE(*policy->trip(closed_counts(4, 4, 4)));
  EXPECT_TRUE(*policy->trip(closed_counts(5, 5, 5)));
  EXPECT_FALSE(*policy->trip(closed_counts(1, 19, 10)));   // too few results
  EXPECT_TRUE(*policy->trip(closed_counts(0, 20, 10)));    // exactly half
  EXPECT_FALSE(*policy->trip(closed_counts(1, 20, 9)));
  EXPECT_TRUE(*policy->trip(closed_counts(1, 1000, 500)));
}

TEST(DefaultPolicy, ParametersApply) {
  DefaultPolicyParams p;
  p.consecutive_failures = 2;
  p.failure_rate = 0.25;
  p.min_results = 4;
  p.successes_to_close = 1;
  const auto policy = make_default_policy(p);
  EXPECT_TRUE(*policy->trip(closed_counts(2, 2, 2)));
  EXPECT_TRUE(*policy->trip(closed_counts(1, 4, 1)));
  EXPECT_FALSE(*policy->trip(closed_counts(1, 3, 1)));
  Counts c;
  c.state = State::kHalfOpen;
  c.successes = 1;
  EXPECT_EQ(*policy->probe(c), ProbeDecision::kClose);
}

TEST(DefaultPolicy, ProbesReopenOnAnyFailureAndCloseOnThreeSuccesses) {
  const auto policy = make_default_policy({});
  Counts c;
  c.state = State::kHalfOpen;
  c.successes = 2;
  EXPECT_EQ(*policy->probe(c), ProbeDecision::kContinue);
  c.successes = 3;
  EXPECT_EQ(*policy->probe(c), ProbeDecision::kClose);
  c.failures = 1;
  EXPECT_EQ(*policy->probe(c), ProbeDecision::kReopen);
}

// A C++ policy that fails, as a binding's throwing callable would surface.
class FailingPolicy final : public Policy {
 public:
  Result<bool> trip(const Counts&) const override { return Status(Code::kProgram, "bad trip"); }
  Result<ProbeDecision> probe(const Counts&) const override { return Status(Code::kProgram, "bad probe"); }
};

TEST(CppPolicy, ErrorsPassThroughWithTheirCode) {
  testing::VirtualClock clock;
  Breaker breaker({}, std::make_shared<const FailingPolicy>(), clock);
  const Admission a = breaker.admit();
  const Status s = breaker.record(a.permit, Outcome::kFailure);
  EXPECT_EQ(s.code(), Code::kProgram);
  EXPECT_EQ(s.message(), "bad trip");
  EXPECT_EQ(breaker.counts().failures, 1u);
  EXPECT_TRUE(breaker.record(breaker.admit().permit, Outcome::kIgnored).ok());  // not asked
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::breaker
