#include "retry/repeat.h"

#include <gtest/gtest.h>

#include <string>

namespace humus::retry {
namespace {
namespace HUMUS_UNITY_ID {

Headers with(std::string name, std::string value) {
  Headers h;
  h.add(std::move(name), std::move(value));
  return h;
}

TEST(Repeat, Rfc9110IdempotentMethodsAreSafe) {
  for (const char* method : {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"}) {
    EXPECT_TRUE(is_idempotent_method(method)) << method;
    EXPECT_TRUE(may_send_twice(method, Headers{}, true, RetryOverride::kDefault)) << method;
  }
}

TEST(Repeat, PostPatchAndOthersAreNotSafe) {
  for (const char* method : {"POST", "PATCH", "CONNECT", "PROPFIND", ""}) {
    EXPECT_FALSE(is_idempotent_method(method)) << method;
    EXPECT_FALSE(may_send_twice(method, Headers{}, true, RetryOverride::kDefault)) << method;
  }
}

TEST(Repeat, MethodsAreCaseSensitive) {
  // RFC 9110 §9.1: "get" is not GET.
  for (const char* method : {"get", "Get", "put", "delete"}) {
    EXPECT_FALSE(is_idempotent_method(method)) << method;
  }
}

TEST(Repeat, IdempotencyKeyMakesPostSafeWhateverTheNameCase) {
  for (const char* name :
       {"Idempotency-Key", "idempotency-key", "IDEMPOTENCY-KEY", "X-Idempotency-Key", "x-idempotency-key"}) {
    const Headers h = with(name, "8e03978e-40d5-43e8-bc93-6894a57f9324");
    EXPECT_TRUE(has_idempotency_key(h)) << name;
    EXPECT_TRUE(may_send_twice("POST", h, true, RetryOverride::kDefault)) << name;
    EXPECT_TRUE(may_send_twice("PATCH", h, true, RetryOverride::kDefault)) << name;
  }
}

TEST(Repeat, OtherHeadersOrAnEmptyKeyDoNotVouch) {
  EXPECT_FALSE(may_send_twice("POST", with("Idempotency", "k"), true, RetryOverride::kDefault));
  EXPECT_FALSE(may_send_twice("POST", with("Idempotency-Keys", "k"), true, RetryOverride::kDefault));
  EXPECT_FALSE(may_send_twice("POST", with("Idempotency-Key", ""), true, RetryOverride::kDefault));
  EXPECT_FALSE(may_send_twice("POST", with("Idempotency-Key", " \t"), true, RetryOverride::kDefault));
  Headers dup = with("Idempotency-Key", "");
  dup.add("X-Idempotency-Key", "k1");
  EXPECT_TRUE(may_send_twice("POST", dup, true, RetryOverride::kDefault));
}

TEST(Repeat, AnUnreplayableBodyIsNeverSentTwice) {
  const Headers key = with("Idempotency-Key", "k");
  EXPECT_FALSE(may_send_twice("PUT", Headers{}, false, RetryOverride::kDefault));
  EXPECT_FALSE(may_send_twice("POST", key, false, RetryOverride::kDefault));
  EXPECT_FALSE(may_send_twice("POST", key, false, RetryOverride::kForce));
  EXPECT_FALSE(may_send_twice("GET", Headers{}, false, RetryOverride::kForce));
}

TEST(Repeat, ForbidMakesOneAttempt) {
  EXPECT_FALSE(may_send_twice("GET", Headers{}, true, RetryOverride::kForbid));
  EXPECT_FALSE(may_send_twice("POST", with("Idempotency-Key", "k"), true, RetryOverride::kForbid));
}

TEST(Repeat, ForceVouchesForAReplayableRequest) {
  EXPECT_TRUE(may_send_twice("POST", Headers{}, true, RetryOverride::kForce));
  EXPECT_TRUE(may_send_twice("PATCH", Headers{}, true, RetryOverride::kForce));
  EXPECT_TRUE(may_send_twice("GET", Headers{}, true, RetryOverride::kForce));
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::retry
