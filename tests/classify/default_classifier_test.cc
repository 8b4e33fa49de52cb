#include "classify/default_classifier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace humus::classify {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::seconds;

constexpr RetryVerdict kDone = RetryVerdict::kDone;
constexpr RetryVerdict kAgain = RetryVerdict::kAgain;
constexpr breaker::Outcome kSuccess = breaker::Outcome::kSuccess;
constexpr breaker::Outcome kFailure = breaker::Outcome::kFailure;
constexpr breaker::Outcome kIgnored = breaker::Outcome::kIgnored;

const WallTime kNow = WallTime(seconds(784111777 - 30));  // 30 s before Sun, 06 Nov 1994 08:49:37 GMT

Classification run(const Classifier& c, int status, const Headers& headers = {}) {
  Attempt a;
  a.method = "GET";
  a.status = status;
  a.headers = &headers;
  a.now = kNow;
  const Result<Classification> r = c.classify(a);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Classification{};
}

Classification run_error(const Classifier& c, Code error) {
  Attempt a;
  a.method = "GET";
  a.error = error;
  a.error_message = "boom";
  a.now = kNow;
  const Result<Classification> r = c.classify(a);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Classification{};
}

Headers retry_after(std::string value) {
  Headers h;
  h.add("retry-after", std::move(value));  // looked up case-insensitively
  return h;
}

void expect(const Classification& c, RetryVerdict retry, breaker::Outcome breaker, const std::string& what) {
  EXPECT_EQ(c.retry, retry) << what;
  EXPECT_EQ(c.breaker, breaker) << what;
  EXPECT_EQ(c.retry_after, Duration::zero()) << what;
}

TEST(DefaultClassifier, IsPresetHumus) {
  ASSERT_NE(default_classifier(), nullptr);
  EXPECT_EQ(preset("humus"), default_classifier());
}

TEST(DefaultClassifier, TwoAndThreeHundredsAreDoneSuccess) {
  const Classifier& c = *default_classifier();
  for (int s : {200, 201, 204, 299, 300, 301, 304, 399})
    expect(run(c, s), kDone, kSuccess, std::to_string(s));
}

// F78
TEST(DefaultClassifier, RequestTimeoutAndTooManyRequestsAreRetriedAsSuccess) {
  const Classifier& c = *default_classifier();
  expect(run(c, 408), kAgain, kSuccess, "408");
  expect(run(c, 429), kAgain, kSuccess, "429");
}

// F79
TEST(DefaultClassifier, OtherFourHundredsAreDoneSuccess) {
  const Classifier& c = *default_classifier();
  for (int s = 400; s <= 499; ++s) {
    if (s == 408 || s == 429) continue;
    expect(run(c, s), kDone, kSuccess, std::to_string(s));
  }
}

// F74, F75
TEST(DefaultClassifier, EveryFiveHundredSplit) {
  const Classifier& c = *default_classifier();
  for (int s = 500; s <= 599; ++s) {
    const bool retried = s == 502 || s == 503 || s == 504;
    expect(run(c, s), retried ? kAgain : kDone, kFailure, std::to_string(s));
  }
}

TEST(DefaultClassifier, OtherStatusesAreDoneSuccess) {
  const Classifier& c = *default_classifier();
  for (int s : {100, 101, 199, 600, 999}) expect(run(c, s), kDone, kSuccess, std::to_string(s));
}

TEST(DefaultClassifier, RetryAfterSecondsOn429And503) {
  const Classifier& c = *default_classifier();
  const Classification too_many = run(c, 429, retry_after("2"));
  EXPECT_EQ(too_many.retry, kAgain);
  EXPECT_EQ(too_many.breaker, kSuccess);
  EXPECT_EQ(too_many.retry_after, seconds(2));
  const Classification unavailable = run(c, 503, retry_after("7"));
  EXPECT_EQ(unavailable.retry, kAgain);
  EXPECT_EQ(unavailable.breaker, kFailure);
  EXPECT_EQ(unavailable.retry_after, seconds(7));
}

TEST(DefaultClassifier, RetryAfterDateMeasuredFromAttemptNow) {
  const Classifier& c = *default_classifier();
  EXPECT_EQ(run(c, 503, retry_after("Sun, 06 Nov 1994 08:49:37 GMT")).retry_after, seconds(30));
  EXPECT_EQ(run(c, 429, retry_after("Sun, 06 Nov 1994 08:49:00 GMT")).retry_after, Duration::zero());  // past
}

TEST(DefaultClassifier, NoOrMalformedRetryAfterIsNone) {
  const Classifier& c = *default_classifier();
  for (int s : {429, 503}) {
    expect(run(c, s), kAgain, s == 429 ? kSuccess : kFailure, std::to_string(s) + " without Retry-After");
    expect(run(c, s, retry_after("soon")), kAgain, s == 429 ? kSuccess : kFailure,
           std::to_string(s) + " soon");
    expect(run(c, s, retry_after("-3")), kAgain, s == 429 ? kSuccess : kFailure, std::to_string(s) + " -3");
  }
}

TEST(DefaultClassifier, RetryAfterOnlyWhereHonoured) {
  const Classifier& c = *default_classifier();
  for (int s : {200, 408, 500, 502, 504})
    expect(run(c, s, retry_after("5")), run(c, s).retry, run(c, s).breaker, std::to_string(s));
}

TEST(DefaultClassifier, NullHeadersAreNoRetryAfter) {
  Attempt a;
  a.status = 503;
  const Result<Classification> r = default_classifier()->classify(a);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->retry_after, Duration::zero());
}

TEST(DefaultClassifier, TransientTransportErrorsAreRetriedAsFailure) {
  const Classifier& c = *default_classifier();
  for (Code e :
       {Code::kConnect, Code::kResolve, Code::kTimeout, Code::kConnectionLost, Code::kStreamRefused}) {
    expect(run_error(c, e), kAgain, kFailure, std::to_string(static_cast<int>(e)));
  }
}

TEST(DefaultClassifier, ProtocolAndTlsErrorsAreDoneFailure) {
  const Classifier& c = *default_classifier();
  for (Code e : {Code::kProtocol, Code::kTls, Code::kTlsClientCert}) {
    expect(run_error(c, e), kDone, kFailure, std::to_string(static_cast<int>(e)));
  }
}

TEST(DefaultClassifier, CancelledIsDoneIgnored) {
  expect(run_error(*default_classifier(), Code::kCancelled), kDone, kIgnored, "cancelled");
}

TEST(DefaultClassifier, UnknownErrorsAreDoneFailure) {
  const Classifier& c = *default_classifier();
  for (Code e : {Code::kInternal, Code::kCallback, Code::kNoMemory, Code::kOk}) {
    expect(run_error(c, e), kDone, kFailure, std::to_string(static_cast<int>(e)));
  }
}

TEST(TableClassifier, FirstMatchingRuleWinsSoPrependingExtends) {
  ClassifierTable t = humus_table();
  t.statuses.insert(t.statuses.begin(), {409, 409, kAgain, kSuccess, false});
  t.errors.insert(t.errors.begin(), {Code::kTls, kAgain, kIgnored});
  const Result<std::shared_ptr<const Classifier>> c = make_table_classifier(t);
  ASSERT_TRUE(c.ok()) << c.status().message();
  expect(run(**c, 409), kAgain, kSuccess, "409");
  expect(run(**c, 410), kDone, kSuccess, "410");
  expect(run_error(**c, Code::kTls), kAgain, kIgnored, "tls");
  // The built-in table is untouched.
  expect(run(*default_classifier(), 409), kDone, kSuccess, "409 default");
}

TEST(TableClassifier, HonourRetryAfterNeedsRetry) {
  ClassifierTable t;
  t.statuses = {{418, 418, kDone, kSuccess, true}, {419, 419, kAgain, kSuccess, true}};
  const Result<std::shared_ptr<const Classifier>> c = make_table_classifier(t);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(run(**c, 418, retry_after("4")).retry_after, Duration::zero());
  EXPECT_EQ(run(**c, 419, retry_after("4")).retry_after, seconds(4));
}

TEST(TableClassifier, InvalidTablesAreRefused) {
  auto refused = [](ClassifierTable t) {
    const Result<std::shared_ptr<const Classifier>> c = make_table_classifier(std::move(t));
    EXPECT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
    return c.status().message();
  };
  ClassifierTable t;
  t.statuses = {{500, 400, kDone, kFailure, false}};
  EXPECT_NE(refused(t).find("status rule 0"), std::string::npos);
  t.statuses = {{99, 200, kDone, kFailure, false}};
  refused(t);
  t.statuses = {{200, 1000, kDone, kFailure, false}};
  refused(t);
  t.statuses = {{200, 200, static_cast<RetryVerdict>(0), kFailure, false}};
  refused(t);
  t.statuses = {{200, 200, kDone, static_cast<breaker::Outcome>(7), false}};
  refused(t);
  t.statuses.clear();
  t.errors = {{Code::kOk, kDone, kFailure}};
  EXPECT_NE(refused(t).find("error rule 0"), std::string::npos);
  t.errors.clear();
  t.other_error.breaker = static_cast<breaker::Outcome>(0);
  refused(t);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::classify
