#include "breaker/breaker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "testing/virtual_clock.h"

namespace humus::breaker {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr nanoseconds kNs{1};

// A breaker on a virtual clock, with every transition it reports kept for inspection.
class BreakerTest : public ::testing::Test {
 protected:
  void make(Breaker::Options options = {}, std::shared_ptr<const Policy> policy = nullptr) {
    breaker_ = std::make_unique<Breaker>(options, policy ? std::move(policy) : make_default_policy({}), clock_);
    breaker_->set_listener([this](const Transition& t) { transitions_.push_back(t); });
  }

  Permit admit() {
    const Admission a = breaker_->admit();
    EXPECT_TRUE(a.admitted);
    return a.permit;
  }

  void result(Outcome outcome) { ASSERT_TRUE(breaker_->record(admit(), outcome).ok()); }
  void results(Outcome outcome, int n) {
    for (int i = 0; i < n; ++i) result(outcome);
  }

  // Opens it with five failures and lets open_for pass, returning when half-open.
  void to_half_open() {
    results(Outcome::kFailure, 5);
    ASSERT_EQ(breaker_->state(), State::kOpen);
    clock_.advance(open_for_);
    ASSERT_EQ(breaker_->state(), State::kHalfOpen);
  }

  testing::VirtualClock clock_;
  std::unique_ptr<Breaker> breaker_;
  std::vector<Transition> transitions_;
  const Duration open_for_ = Breaker::Options{}.open_for;
};

TEST_F(BreakerTest, StartsClosedAndAdmits) {
  make();
  EXPECT_EQ(breaker_->state(), State::kClosed);
  EXPECT_EQ(breaker_->generation(), 1u);
  const Admission a = breaker_->admit();
  EXPECT_TRUE(a.admitted);
  EXPECT_FALSE(a.permit.probe);
  EXPECT_EQ(a.permit.generation, 1u);
  EXPECT_EQ(breaker_->retry_after(), Duration::zero());
}

TEST_F(BreakerTest, OpensOnTheFifthConsecutiveFailureNotTheFourth) {
  make();
  results(Outcome::kFailure, 4);
  EXPECT_EQ(breaker_->state(), State::kClosed);
  EXPECT_EQ(breaker_->counts().consecutive_failures, 4u);
  result(Outcome::kFailure);
  EXPECT_EQ(breaker_->state(), State::kOpen);
  const Admission a = breaker_->admit();
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.retry_after, open_for_);
}

TEST_F(BreakerTest, ASuccessResetsTheStreak) {
  make();
  results(Outcome::kFailure, 4);
  result(Outcome::kSuccess);
  EXPECT_EQ(breaker_->counts().consecutive_failures, 0u);
  EXPECT_EQ(breaker_->counts().consecutive_successes, 1u);
  results(Outcome::kFailure, 4);
  EXPECT_EQ(breaker_->state(), State::kClosed);
  result(Outcome::kFailure);
  EXPECT_EQ(breaker_->state(), State::kOpen);
}

TEST_F(BreakerTest, OpensOnHalfOfTwentyResultsWithoutAStreak) {
  make();
  for (int i = 0; i < 19; ++i) result(i % 2 == 0 ? Outcome::kFailure : Outcome::kSuccess);
  // 10 failures of 19 results: over half, but fewer results than min_results.
  Counts c = breaker_->counts();
  EXPECT_EQ(c.window_results, 19u);
  EXPECT_EQ(c.window_failures, 10u);
  EXPECT_EQ(breaker_->state(), State::kClosed);
  result(Outcome::kSuccess);  // 10 of 20: a success opens it
  EXPECT_EQ(breaker_->state(), State::kOpen);
  ASSERT_EQ(transitions_.size(), 1u);
  EXPECT_EQ(transitions_[0].counts_at_change.window_results, 20u);
  EXPECT_EQ(transitions_[0].counts_at_change.window_failures, 10u);
  EXPECT_EQ(transitions_[0].counts_at_change.consecutive_failures, 0u);
}

TEST_F(BreakerTest, NineFailuresOfTwentyStayClosed) {
  make();
  result(Outcome::kSuccess);
  for (int i = 0; i < 19; ++i) result(i % 2 == 0 ? Outcome::kSuccess : Outcome::kFailure);
  EXPECT_EQ(breaker_->counts().window_failures, 9u);
  EXPECT_EQ(breaker_->state(), State::kClosed);
}

TEST_F(BreakerTest, ResultsOutsideTheWindowAreForgotten) {
  make();
  for (int i = 0; i < 9; ++i) {
    result(Outcome::kFailure);
    result(Outcome::kSuccess);
  }
  results(Outcome::kSuccess, 20);
  Counts c = breaker_->counts();
  EXPECT_EQ(c.window_results, 20u);
  EXPECT_EQ(c.window_failures, 0u);
  EXPECT_EQ(c.failures, 9u);  // the state's own counts remember them; the window does not
  for (int i = 0; i < 9; ++i) {
    result(Outcome::kFailure);
    result(Outcome::kSuccess);
  }
  // 9 of the last 20 failed (18 of the state's 56): still closed.
  EXPECT_EQ(breaker_->counts().window_failures, 9u);
  EXPECT_EQ(breaker_->state(), State::kClosed);
  result(Outcome::kFailure);  // now 10 of the last 20
  EXPECT_EQ(breaker_->state(), State::kOpen);
}

TEST_F(BreakerTest, WindowOfOneSeesOnlyTheLastResult) {
  DefaultPolicyParams p;
  p.consecutive_failures = 0;  // off
  p.min_results = 1;
  p.failure_rate = 1.0;
  make(Breaker::Options{.window = 1}, make_default_policy(p));
  result(Outcome::kSuccess);
  EXPECT_EQ(breaker_->counts().window_results, 1u);
  EXPECT_EQ(breaker_->counts().window_failures, 0u);
  result(Outcome::kFailure);
  EXPECT_EQ(breaker_->state(), State::kOpen);
}

TEST_F(BreakerTest, OpenRejectsWithRetryAfterThatShrinks) {
  make();
  results(Outcome::kFailure, 5);
  EXPECT_EQ(breaker_->admit().retry_after, seconds(10));
  clock_.advance(seconds(3));
  Admission a = breaker_->admit();
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.retry_after, seconds(7));
  EXPECT_EQ(breaker_->retry_after(), seconds(7));
  clock_.advance(seconds(7) - kNs);
  a = breaker_->admit();
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.retry_after, kNs);
}

TEST_F(BreakerTest, AdvancesToHalfOpenLazilyExactlyAtOpenFor) {
  make();
  results(Outcome::kFailure, 5);
  const uint64_t opened = breaker_->generation();
  clock_.advance(open_for_ - kNs);
  EXPECT_EQ(breaker_->state(), State::kOpen);
  EXPECT_EQ(breaker_->generation(), opened);
  clock_.advance(kNs);
  EXPECT_EQ(breaker_->state(), State::kHalfOpen);
  EXPECT_EQ(breaker_->generation(), opened + 1);
  EXPECT_EQ(breaker_->retry_after(), Duration::zero());
}

TEST_F(BreakerTest, AdmitAloneAdvancesToHalfOpen) {
  make();
  results(Outcome::kFailure, 5);
  clock_.advance(open_for_ + seconds(5));  // long after: the change is dated when open_for ran out
  const Admission a = breaker_->admit();
  EXPECT_TRUE(a.admitted);
  EXPECT_TRUE(a.permit.probe);
  ASSERT_EQ(transitions_.size(), 2u);
  EXPECT_EQ(transitions_[1].to, State::kHalfOpen);
  EXPECT_EQ(transitions_[1].at, transitions_[0].at + open_for_);
}

// F106
TEST_F(BreakerTest, ExactlyOneProbePassesByDefault) {
  make();
  to_half_open();
  const Admission probe = breaker_->admit();
  ASSERT_TRUE(probe.admitted);
  EXPECT_TRUE(probe.permit.probe);
  clock_.advance(seconds(4));
  for (int i = 0; i < 3; ++i) {
    const Admission a = breaker_->admit();
    EXPECT_FALSE(a.admitted);
    EXPECT_EQ(a.retry_after, seconds(6));  // until the probe would time out
  }
  EXPECT_EQ(breaker_->retry_after(), seconds(6));
}

TEST_F(BreakerTest, ExactlyThreeProbesPassWhenThreeAreAllowed) {
  make(Breaker::Options{.probes = 3});
  to_half_open();
  std::vector<Permit> probes;
  for (int i = 0; i < 3; ++i) {
    const Admission a = breaker_->admit();
    ASSERT_TRUE(a.admitted);
    EXPECT_TRUE(a.permit.probe);
    probes.push_back(a.permit);
    clock_.advance(seconds(1));
  }
  const Admission a = breaker_->admit();
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.retry_after, seconds(7));  // the oldest of the three times out first
  ASSERT_TRUE(breaker_->record(probes[1], Outcome::kSuccess).ok());
  EXPECT_TRUE(breaker_->admit().admitted);  // one slot came free
  EXPECT_FALSE(breaker_->admit().admitted);
}

TEST_F(BreakerTest, AFailedProbeReopensForAFullOpenForFromTheFailure) {
  make();
  to_half_open();
  clock_.advance(seconds(2));
  const Permit probe = admit();
  clock_.advance(seconds(3));
  ASSERT_TRUE(breaker_->record(probe, Outcome::kFailure).ok());
  EXPECT_EQ(breaker_->state(), State::kOpen);
  EXPECT_EQ(breaker_->retry_after(), open_for_);
  clock_.advance(open_for_ - kNs);
  EXPECT_EQ(breaker_->state(), State::kOpen);
  EXPECT_EQ(breaker_->retry_after(), kNs);
  clock_.advance(kNs);
  EXPECT_EQ(breaker_->state(), State::kHalfOpen);
}

TEST_F(BreakerTest, ThreeSuccessfulProbesCloseTwoDoNot) {
  make();
  to_half_open();
  result(Outcome::kSuccess);
  result(Outcome::kSuccess);
  EXPECT_EQ(breaker_->state(), State::kHalfOpen);
  EXPECT_EQ(breaker_->counts().successes, 2u);
  result(Outcome::kSuccess);
  EXPECT_EQ(breaker_->state(), State::kClosed);
  const Counts c = breaker_->counts();
  EXPECT_EQ(c.successes, 0u);
  EXPECT_EQ(c.window_results, 0u);
  EXPECT_EQ(c.state, State::kClosed);
  // Closed afresh: the failures that opened it are gone, so it takes five more.
  results(Outcome::kFailure, 4);
  EXPECT_EQ(breaker_->state(), State::kClosed);
}

TEST_F(BreakerTest, ThreeConcurrentProbesClose) {
  make(Breaker::Options{.probes = 3});
  to_half_open();
  const Permit a = admit(), b = admit(), c = admit();
  ASSERT_TRUE(breaker_->record(b, Outcome::kSuccess).ok());
  ASSERT_TRUE(breaker_->record(a, Outcome::kSuccess).ok());
  EXPECT_EQ(breaker_->state(), State::kHalfOpen);
  ASSERT_TRUE(breaker_->record(c, Outcome::kSuccess).ok());
  EXPECT_EQ(breaker_->state(), State::kClosed);
}

// F107
TEST_F(BreakerTest, AStaleFailureDoesNotReopenAHalfOpenBreaker) {
  make();
  const Permit slow = admit();  // a slow call admitted while closed
  results(Outcome::kFailure, 5);
  clock_.advance(open_for_);
  ASSERT_EQ(breaker_->state(), State::kHalfOpen);
  const Counts before = breaker_->counts();
  EXPECT_TRUE(breaker_->record(slow, Outcome::kFailure).ok());
  EXPECT_EQ(breaker_->state(), State::kHalfOpen);
  EXPECT_EQ(breaker_->counts().failures, before.failures);
  EXPECT_TRUE(breaker_->admit().admitted);  // and it took no probe slot either
}

// F107
TEST_F(BreakerTest, AStaleSuccessDoesNotTouchAnOpenBreaker) {
  make();
  const Permit slow = admit();
  results(Outcome::kFailure, 5);
  const uint64_t generation = breaker_->generation();
  EXPECT_TRUE(breaker_->record(slow, Outcome::kSuccess).ok());
  EXPECT_EQ(breaker_->state(), State::kOpen);
  EXPECT_EQ(breaker_->generation(), generation);
  EXPECT_EQ(breaker_->counts().successes, 0u);
}

TEST_F(BreakerTest, AProbeFromAnEarlierHalfOpenIsStale) {
  make(Breaker::Options{.probes = 2});
  to_half_open();
  const Permit first = admit(), second = admit();
  ASSERT_TRUE(breaker_->record(first, Outcome::kFailure).ok());  // reopens
  clock_.advance(open_for_);
  ASSERT_EQ(breaker_->state(), State::kHalfOpen);
  EXPECT_TRUE(breaker_->record(second, Outcome::kSuccess).ok());
  EXPECT_EQ(breaker_->counts().successes, 0u);
  EXPECT_TRUE(breaker_->admit().admitted);
  EXPECT_TRUE(breaker_->admit().admitted);
  EXPECT_FALSE(breaker_->admit().admitted);
}

TEST_F(BreakerTest, AProbeWhoseResultNeverComesFreesItsSlotAfterProbeTimeout) {
  make(Breaker::Options{.probe_timeout = seconds(4)});
  to_half_open();
  const Permit lost = admit();
  clock_.advance(seconds(4) - kNs);
  Admission a = breaker_->admit();
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.retry_after, kNs);
  clock_.advance(kNs);
  EXPECT_EQ(breaker_->counts().timed_out_probes, 1u);  // a read notices it, no admit needed
  a = breaker_->admit();
  ASSERT_TRUE(a.admitted);
  EXPECT_TRUE(a.permit.probe);
  // The lost probe's late result is stale: it neither counts nor frees the new probe's slot.
  EXPECT_TRUE(breaker_->record(lost, Outcome::kSuccess).ok());
  const Counts c = breaker_->counts();
  EXPECT_EQ(c.successes, 0u);
  EXPECT_EQ(c.timed_out_probes, 1u);
  EXPECT_FALSE(breaker_->admit().admitted);
  EXPECT_EQ(breaker_->state(), State::kHalfOpen);
}

TEST_F(BreakerTest, AResultArrivingAfterProbeTimeoutIsStaleEvenIfNobodyLooked) {
  make(Breaker::Options{.probe_timeout = seconds(4)});
  to_half_open();
  const Permit late = admit();
  clock_.advance(seconds(4));
  EXPECT_TRUE(breaker_->record(late, Outcome::kFailure).ok());
  EXPECT_EQ(breaker_->state(), State::kHalfOpen);  // the failure would have reopened it
  const Counts c = breaker_->counts();
  EXPECT_EQ(c.failures, 0u);
  EXPECT_EQ(c.timed_out_probes, 1u);
}

TEST_F(BreakerTest, IgnoredResultsCountNothing) {
  make();
  results(Outcome::kIgnored, 50);
  const Counts c = breaker_->counts();
  EXPECT_EQ(c.successes + c.failures + c.consecutive_successes + c.consecutive_failures, 0u);
  EXPECT_EQ(c.window_results, 0u);
  results(Outcome::kFailure, 4);
  results(Outcome::kIgnored, 3);  // does not break the streak either
  result(Outcome::kFailure);
  EXPECT_EQ(breaker_->state(), State::kOpen);
}

TEST_F(BreakerTest, ACancelledProbeFreesItsSlotAndCountsNothing) {
  make();
  to_half_open();
  const Permit cancelled = admit();
  EXPECT_FALSE(breaker_->admit().admitted);
  ASSERT_TRUE(breaker_->record(cancelled, Outcome::kIgnored).ok());
  const Counts c = breaker_->counts();
  EXPECT_EQ(c.successes + c.failures + c.timed_out_probes, 0u);
  EXPECT_EQ(breaker_->state(), State::kHalfOpen);
  EXPECT_TRUE(breaker_->admit().admitted);
}

TEST_F(BreakerTest, EachTransitionIsReportedOnceWithTheCountsAtTheChange) {
  make();
  const Instant start = clock_.now();
  results(Outcome::kSuccess, 2);
  results(Outcome::kFailure, 5);
  clock_.advance(open_for_);
  for (int i = 0; i < 5; ++i) (void)breaker_->state();  // several reads, one change
  clock_.advance(seconds(1));
  results(Outcome::kSuccess, 3);
  (void)breaker_->counts();
  ASSERT_EQ(transitions_.size(), 3u);

  EXPECT_EQ(transitions_[0].from, State::kClosed);
  EXPECT_EQ(transitions_[0].to, State::kOpen);
  EXPECT_EQ(transitions_[0].counts_at_change.state, State::kClosed);
  EXPECT_EQ(transitions_[0].counts_at_change.successes, 2u);
  EXPECT_EQ(transitions_[0].counts_at_change.failures, 5u);
  EXPECT_EQ(transitions_[0].counts_at_change.consecutive_failures, 5u);
  EXPECT_EQ(transitions_[0].counts_at_change.window_results, 7u);
  EXPECT_EQ(transitions_[0].at, start);
  EXPECT_EQ(transitions_[0].generation, 2u);

  EXPECT_EQ(transitions_[1].from, State::kOpen);
  EXPECT_EQ(transitions_[1].to, State::kHalfOpen);
  EXPECT_EQ(transitions_[1].counts_at_change.state, State::kOpen);
  EXPECT_EQ(transitions_[1].at, start + open_for_);
  EXPECT_EQ(transitions_[1].generation, 3u);

  EXPECT_EQ(transitions_[2].from, State::kHalfOpen);
  EXPECT_EQ(transitions_[2].to, State::kClosed);
  EXPECT_EQ(transitions_[2].counts_at_change.successes, 3u);
  EXPECT_EQ(transitions_[2].counts_at_change.consecutive_successes, 3u);
  EXPECT_EQ(transitions_[2].at, start + open_for_ + seconds(1));
  EXPECT_EQ(transitions_[2].generation, 4u);
  EXPECT_EQ(breaker_->generation(), 4u);
}

TEST_F(BreakerTest, TheListenerMayCallTheBreaker) {
  make();
  std::vector<State> seen;
  breaker_->set_listener([&](const Transition& t) {
    seen.push_back(breaker_->state());  // no lock is held: this must not deadlock
    EXPECT_EQ(breaker_->generation(), t.generation);
  });
  results(Outcome::kFailure, 5);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], State::kOpen);
}

TEST_F(BreakerTest, TransitionsMadeInsideTheListenerAreDeliveredAfterItInOrder) {
  make();
  std::vector<std::pair<State, State>> seen;
  breaker_->set_listener([&](const Transition& t) {
    seen.emplace_back(t.from, t.to);
    if (t.to == State::kOpen) {
      clock_.advance(open_for_);
      (void)breaker_->state();  // causes open → half-open from inside the delivery
      EXPECT_EQ(seen.size(), 1u);
    }
  });
  results(Outcome::kFailure, 5);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], std::make_pair(State::kOpen, State::kHalfOpen));
}

TEST_F(BreakerTest, NoListenerNoReports) {
  make();
  breaker_->set_listener(nullptr);
  results(Outcome::kFailure, 5);
  EXPECT_TRUE(transitions_.empty());
  EXPECT_EQ(breaker_->state(), State::kOpen);
}

TEST_F(BreakerTest, ANullPolicyMeansTheDefault) {
  breaker_ = std::make_unique<Breaker>(Breaker::Options{}, nullptr, clock_);
  results(Outcome::kFailure, 5);
  EXPECT_EQ(breaker_->state(), State::kOpen);
}

TEST_F(BreakerTest, HugeDurationsSaturate) {
  make(Breaker::Options{.open_for = Duration::max(), .probe_timeout = Duration::max()});
  results(Outcome::kFailure, 5);
  clock_.advance(seconds(1000000));
  EXPECT_EQ(breaker_->state(), State::kOpen);
  EXPECT_GT(breaker_->retry_after(), seconds(1000000));
}

TEST(BreakerNames, StateAndOutcomeNames) {
  EXPECT_STREQ(state_name(State::kClosed), "closed");
  EXPECT_STREQ(state_name(State::kOpen), "open");
  EXPECT_STREQ(state_name(State::kHalfOpen), "half_open");
  EXPECT_STREQ(state_name(static_cast<State>(42)), "unknown");
  EXPECT_STREQ(outcome_name(Outcome::kSuccess), "success");
  EXPECT_STREQ(outcome_name(Outcome::kFailure), "failure");
  EXPECT_STREQ(outcome_name(Outcome::kIgnored), "ignored");
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::breaker
