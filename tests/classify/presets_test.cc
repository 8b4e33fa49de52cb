#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "classify/default_classifier.h"

namespace humus::classify {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::seconds;

Classification run(const Classifier& c, int status, const Headers& headers = {}) {
  Attempt a;
  a.status = status;
  a.headers = &headers;
  const Result<Classification> r = c.classify(a);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : Classification{};
}

Classification run_error(const Classifier& c, Code error) {
  Attempt a;
  a.error = error;
  const Result<Classification> r = c.classify(a);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : Classification{};
}

const Code kErrors[] = {Code::kConnect,       Code::kResolve,  Code::kTimeout, Code::kConnectionLost,
                        Code::kStreamRefused, Code::kProtocol, Code::kTls,     Code::kTlsClientCert,
                        Code::kCancelled,     Code::kInternal};

TEST(Presets, KnownNamesAreSharedInstances) {
  for (const char* name : {"humus", "jfast", "strict"}) {
    const std::shared_ptr<const Classifier> c = preset(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c, preset(name)) << name;
    EXPECT_TRUE(preset_table(name).has_value()) << name;
  }
  EXPECT_NE(preset("jfast"), preset("strict"));
}

TEST(Presets, UnknownNameIsNull) {
  for (const char* name : {"", "HUMUS", "Jfast", "default", "humus "}) {
    EXPECT_EQ(preset(name), nullptr) << name;
    EXPECT_FALSE(preset_table(name).has_value()) << name;
  }
}

TEST(Presets, JfastDiffersFromHumusOnlyIn500And429) {
  const Classifier& humus = *preset("humus");
  const Classifier& jfast = *preset("jfast");
  for (int s = 100; s <= 999; ++s) {
    const Classification h = run(humus, s);
    const Classification j = run(jfast, s);
    EXPECT_EQ(j.retry, h.retry) << s;
    if (s == 500) {
      EXPECT_EQ(j.breaker, breaker::Outcome::kSuccess);
    } else if (s == 429) {
      EXPECT_EQ(j.breaker, breaker::Outcome::kIgnored);
    } else {
      EXPECT_EQ(j.breaker, h.breaker) << s;
    }
  }
  for (Code e : kErrors) {
    EXPECT_EQ(run_error(jfast, e).retry, run_error(humus, e).retry);
    EXPECT_EQ(run_error(jfast, e).breaker, run_error(humus, e).breaker);
  }
}

TEST(Presets, JfastStillHonoursRetryAfterOn429) {
  Headers h;
  h.add("Retry-After", "3");
  const Classification c = run(*preset("jfast"), 429, h);
  EXPECT_EQ(c.retry, RetryVerdict::kAgain);
  EXPECT_EQ(c.breaker, breaker::Outcome::kIgnored);
  EXPECT_EQ(c.retry_after, seconds(3));
}

TEST(Presets, StrictSucceedsOnlyOn2xxWithHumusRetryVerdicts) {
  const Classifier& humus = *preset("humus");
  const Classifier& strict = *preset("strict");
  for (int s = 100; s <= 999; ++s) {
    const Classification h = run(humus, s);
    const Classification t = run(strict, s);
    EXPECT_EQ(t.retry, h.retry) << s;
    EXPECT_EQ(t.breaker, s >= 200 && s <= 299 ? breaker::Outcome::kSuccess : breaker::Outcome::kFailure) << s;
  }
  Headers h;
  h.add("Retry-After", "4");
  EXPECT_EQ(run(strict, 429, h).retry_after, seconds(4));
  EXPECT_EQ(run(strict, 503, h).retry_after, seconds(4));
  for (Code e : kErrors) {
    EXPECT_EQ(run_error(strict, e).retry, run_error(humus, e).retry);
    EXPECT_EQ(run_error(strict, e).breaker, run_error(humus, e).breaker);
  }
}

TEST(Presets, TablesAreDataToExtend) {
  // A user's variant of jfast: 409 is retried and counts for the dependency.
  ClassifierTable t = *preset_table("jfast");
  t.statuses.insert(t.statuses.begin(), {409, 409, RetryVerdict::kAgain, breaker::Outcome::kSuccess, false});
  const Result<std::shared_ptr<const Classifier>> mine = make_table_classifier(std::move(t));
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(run(**mine, 409).retry, RetryVerdict::kAgain);
  EXPECT_EQ(run(**mine, 500).breaker, breaker::Outcome::kSuccess);     // still jfast
  EXPECT_EQ(run(*preset("jfast"), 409).retry, RetryVerdict::kDone);  // the preset is untouched
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::classify
