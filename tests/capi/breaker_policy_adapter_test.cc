// The breaker policy adapter (docs/breaker.md §9.3): a C policy table drives a core Breaker, sees the counts as
// the C struct, and its user data is released once.
#include "capi/breaker_policy_adapter.h"

#include <gtest/gtest.h>

#include <chrono>

#include "breaker/breaker.h"
#include "humus_http.h"
#include "testing/virtual_clock.h"

namespace humus::capi {
namespace {
namespace HUMUS_UNITY_ID {

using breaker::Admission;
using breaker::Breaker;
using breaker::Counts;
using breaker::Outcome;
using breaker::Policy;
using breaker::State;
using breaker::Transition;
using std::chrono::seconds;

// A C policy whose behaviour a test sets through its user data.
struct CBehaviour {
  int destroyed = 0;
  humus_status trip_status = HUMUS_OK;
  humus_status probe_status = HUMUS_OK;
  int32_t probe_decision = HUMUS_PROBE_CONTINUE;
  uint64_t trip_after_failures = 0;  // 0: never trips
  uint64_t close_after_successes = 1;
  humus_breaker_counts last{};
  int calls = 0;
};

humus_status c_trip(void* user_data, const humus_breaker_counts* counts, int32_t* open) {
  auto* b = static_cast<CBehaviour*>(user_data);
  ++b->calls;
  b->last = *counts;
  if (b->trip_status != HUMUS_OK) return b->trip_status;
  *open = b->trip_after_failures != 0 && counts->failures >= b->trip_after_failures ? 1 : 0;
  return HUMUS_OK;
}

humus_status c_probe(void* user_data, const humus_breaker_counts* counts, int32_t* decision) {
  auto* b = static_cast<CBehaviour*>(user_data);
  ++b->calls;
  b->last = *counts;
  if (b->probe_status != HUMUS_OK) return b->probe_status;
  if (b->probe_decision != HUMUS_PROBE_CONTINUE) {
    *decision = b->probe_decision;
  } else if (counts->failures > 0) {
    *decision = HUMUS_PROBE_REOPEN;
  } else if (counts->successes >= b->close_after_successes) {
    *decision = HUMUS_PROBE_CLOSE;
  } else {
    *decision = HUMUS_PROBE_CONTINUE;
  }
  return HUMUS_OK;
}

void c_destroy(void* user_data) { ++static_cast<CBehaviour*>(user_data)->destroyed; }

humus_breaker_policy table_for(CBehaviour& b) {
  humus_breaker_policy t = HUMUS_BREAKER_POLICY_INIT;
  t.trip = c_trip;
  t.probe = c_probe;
  t.user_data = &b;
  t.destroy = c_destroy;
  return t;
}

std::shared_ptr<const Policy> c_policy(CBehaviour& b) {
  auto made = make_c_policy(table_for(b));
  EXPECT_TRUE(made.ok()) << made.status().message();
  return made.ok() ? *made : nullptr;
}

void record(Breaker& breaker, Outcome outcome, Code expected = Code::kOk) {
  const Admission a = breaker.admit();
  ASSERT_TRUE(a.admitted);
  const Status s = breaker.record(a.permit, outcome);
  EXPECT_EQ(s.code(), expected) << s.message();
}

TEST(CPolicy, DestroyRunsExactlyOnceWhenTheLastHolderLetsGo) {
  CBehaviour b;
  testing::VirtualClock clock;
  {
    std::shared_ptr<const Policy> policy = c_policy(b);
    auto copy = policy;
    {
      Breaker one({}, policy, clock);
      Breaker two({}, policy, clock);
      record(one, Outcome::kFailure);
    }
    policy.reset();
    EXPECT_EQ(b.destroyed, 0);
  }
  EXPECT_EQ(b.destroyed, 1);
}

TEST(CPolicy, NoDestroyIsFine) {
  CBehaviour b;
  humus_breaker_policy t = table_for(b);
  t.destroy = nullptr;
  auto made = make_c_policy(t);
  ASSERT_TRUE(made.ok());
  made = Status(Code::kInternal, "drop it");
  EXPECT_EQ(b.destroyed, 0);
}

TEST(CPolicy, NullCallbacksAreProgramErrorsAndKeepUserData) {
  CBehaviour b;
  humus_breaker_policy t = table_for(b);
  t.trip = nullptr;
  auto made = make_c_policy(t);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), Code::kProgram);
  EXPECT_EQ(made.status().message(), "breaker policy: trip callback is NULL");

  t = table_for(b);
  t.probe = nullptr;
  made = make_c_policy(t);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), Code::kProgram);
  EXPECT_EQ(made.status().message(), "breaker policy: probe callback is NULL");
  EXPECT_EQ(b.destroyed, 0);  // on failure the caller keeps user_data
}

TEST(CPolicy, AnUnknownVersionIsAnInvalidArgument) {
  CBehaviour b;
  humus_breaker_policy t = table_for(b);
  t.version = HUMUS_BREAKER_POLICY_VERSION + 1;
  auto made = make_c_policy(t);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(b.destroyed, 0);
}

TEST(CPolicy, SeesTheCountsAsTheCStruct) {
  CBehaviour b;
  testing::VirtualClock clock;
  Breaker breaker({}, c_policy(b), clock);
  record(breaker, Outcome::kSuccess);
  record(breaker, Outcome::kFailure);
  EXPECT_EQ(b.last.version, static_cast<uint32_t>(HUMUS_BREAKER_COUNTS_VERSION));
  EXPECT_EQ(b.last.state, HUMUS_CIRCUIT_CLOSED);
  EXPECT_EQ(b.last.successes, 1u);
  EXPECT_EQ(b.last.failures, 1u);
  EXPECT_EQ(b.last.consecutive_failures, 1u);
  EXPECT_EQ(b.last.window_results, 2u);
  EXPECT_EQ(b.last.window_failures, 1u);
}

TEST(CPolicy, AnAlwaysFalseTripNeverOpens) {
  CBehaviour b;  // trip_after_failures = 0: never
  testing::VirtualClock clock;
  Breaker breaker({}, c_policy(b), clock);
  for (int i = 0; i < 1000; ++i) record(breaker, Outcome::kFailure);
  EXPECT_EQ(breaker.state(), State::kClosed);
  EXPECT_EQ(breaker.counts().consecutive_failures, 1000u);
}

TEST(CPolicy, ACustomPolicyDrivesOpenAndClose) {
  CBehaviour b;
  b.trip_after_failures = 2;  // two failures at all, streak or not
  b.close_after_successes = 1;
  testing::VirtualClock clock;
  Breaker breaker(Breaker::Options{.open_for = seconds(1)}, c_policy(b), clock);
  record(breaker, Outcome::kFailure);
  record(breaker, Outcome::kSuccess);
  EXPECT_EQ(breaker.state(), State::kClosed);
  record(breaker, Outcome::kFailure);
  EXPECT_EQ(breaker.state(), State::kOpen);
  clock.advance(seconds(1));
  record(breaker, Outcome::kSuccess);
  EXPECT_EQ(b.last.state, HUMUS_CIRCUIT_HALF_OPEN);
  EXPECT_EQ(breaker.state(), State::kClosed);
}

TEST(CPolicy, AFailingTripCountsAFailureAndStaysClosed) {
  CBehaviour b;
  b.trip_status = HUMUS_E_INTERNAL;
  testing::VirtualClock clock;
  Breaker breaker({}, c_policy(b), clock);
  record(breaker, Outcome::kSuccess, Code::kCallback);
  const Counts c = breaker.counts();
  EXPECT_EQ(breaker.state(), State::kClosed);
  EXPECT_EQ(c.successes, 0u);
  EXPECT_EQ(c.failures, 1u);
  EXPECT_EQ(c.consecutive_failures, 1u);
  EXPECT_EQ(c.window_results, 1u);
  EXPECT_EQ(c.window_failures, 1u);
  b.trip_status = HUMUS_OK;
  b.trip_after_failures = 2;
  record(breaker, Outcome::kFailure);  // works again, and saw the failure counted
  EXPECT_EQ(breaker.state(), State::kOpen);
}

TEST(CPolicy, AFailingProbeReopensTheBreaker) {
  CBehaviour b;
  b.trip_after_failures = 1;
  testing::VirtualClock clock;
  Breaker breaker(Breaker::Options{.open_for = seconds(1)}, c_policy(b), clock);
  std::vector<Transition> transitions;
  breaker.set_listener([&](const Transition& t) { transitions.push_back(t); });
  record(breaker, Outcome::kFailure);
  clock.advance(seconds(1));
  b.probe_status = HUMUS_E_CALLBACK;
  record(breaker, Outcome::kSuccess, Code::kCallback);
  EXPECT_EQ(breaker.state(), State::kOpen);
  ASSERT_EQ(transitions.size(), 3u);
  EXPECT_EQ(transitions[2].from, State::kHalfOpen);
  EXPECT_EQ(transitions[2].counts_at_change.failures, 1u);  // the success counted as a failure
  EXPECT_EQ(transitions[2].counts_at_change.successes, 0u);
  EXPECT_EQ(breaker.retry_after(), seconds(1));
  // Consistent: the next cool-down gives a fresh probe slot.
  clock.advance(seconds(1));
  b.probe_status = HUMUS_OK;
  record(breaker, Outcome::kSuccess);
  EXPECT_EQ(breaker.state(), State::kClosed);
}

TEST(CPolicy, AnInvalidProbeDecisionIsAProgramErrorAndReopens) {
  CBehaviour b;
  b.trip_after_failures = 1;
  testing::VirtualClock clock;
  Breaker breaker(Breaker::Options{.open_for = seconds(1)}, c_policy(b), clock);
  record(breaker, Outcome::kFailure);
  clock.advance(seconds(1));
  b.probe_decision = 7;
  record(breaker, Outcome::kSuccess, Code::kProgram);
  EXPECT_EQ(breaker.state(), State::kOpen);
  b.probe_decision = -1;
  clock.advance(seconds(1));
  record(breaker, Outcome::kSuccess, Code::kProgram);
  EXPECT_EQ(breaker.state(), State::kOpen);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::capi
