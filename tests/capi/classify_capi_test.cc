#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "capi/attempt_view.h"
#include "capi/classifier_adapter.h"
#include "classify/classification.h"
#include "humus_http.h"
#include "retry/retry_after.h"

namespace humus::classify {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using std::chrono::seconds;

// What the C callbacks below see and return; one per test through user_data.
struct Script {
  humus_classification answer{HUMUS_RETRY_DONE, HUMUS_BREAKER_SUCCESS, 0};
  humus_status rc = HUMUS_OK;
  int destroyed = 0;
  int calls = 0;
  // Recorded from the humus_attempt the callback received.
  std::string method;
  int32_t status = -1;
  std::string retry_after;
  bool retry_after_null = false;
  humus_status error = -1;
  std::string error_message;
  int32_t number = -1;
};

humus_status scripted(void* user_data, const humus_attempt* a, humus_classification* out) {
  auto* s = static_cast<Script*>(user_data);
  ++s->calls;
  s->method = humus_attempt_method(a);
  s->status = humus_attempt_status(a);
  const char* ra = humus_attempt_header(a, "RETRY-AFTER");
  s->retry_after_null = ra == nullptr;
  s->retry_after = ra == nullptr ? "" : ra;
  s->error = humus_attempt_error(a);
  s->error_message = humus_attempt_error_message(a);
  s->number = humus_attempt_number(a);
  *out = s->answer;
  return s->rc;
}

// A custom classifier in C style: 409 is retried as a success; everything else as the default says.
humus_status delegating(void* user_data, const humus_attempt* a, humus_classification* out) {
  ++static_cast<Script*>(user_data)->calls;
  if (humus_attempt_status(a) == 409) {
    out->retry = HUMUS_RETRY_AGAIN;
    out->breaker = HUMUS_BREAKER_SUCCESS;
    out->retry_after_ms = 0;
    return HUMUS_OK;
  }
  return humus_classify_default(a, out);
}

void count_destroy(void* user_data) { ++static_cast<Script*>(user_data)->destroyed; }

humus_classifier table_for(Script& s, decltype(humus_classifier::classify) fn = scripted) {
  humus_classifier t = HUMUS_CLASSIFIER_INIT;
  t.classify = fn;
  t.user_data = &s;
  t.destroy = count_destroy;
  return t;
}

std::shared_ptr<const Classifier> make(const humus_classifier& t) {
  Result<std::shared_ptr<const Classifier>> r = capi::make_c_classifier(t);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : nullptr;
}

TEST(CClassifier, DestroyRunsOnceWhenTheLastHolderLetsGo) {
  Script s;
  {
    std::shared_ptr<const Classifier> a = make(table_for(s));
    std::shared_ptr<const Classifier> b = a;
    a.reset();
    EXPECT_EQ(s.destroyed, 0);
    Attempt attempt;
    attempt.status = 200;
    EXPECT_TRUE(b->classify(attempt).ok());
    EXPECT_EQ(s.destroyed, 0);
  }
  EXPECT_EQ(s.destroyed, 1);
}

TEST(CClassifier, DestroyIsOptional) {
  Script s;
  humus_classifier t = table_for(s);
  t.destroy = nullptr;
  make(t).reset();
  EXPECT_EQ(s.destroyed, 0);
}

TEST(CClassifier, NullClassifyIsProgramErrorAndKeepsUserData) {
  Script s;
  humus_classifier t = table_for(s);
  t.classify = nullptr;
  const Result<std::shared_ptr<const Classifier>> r = capi::make_c_classifier(t);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(static_cast<humus_status>(r.status().code()), HUMUS_E_PROGRAM);
  EXPECT_EQ(r.status().message(), "classifier: classify callback is NULL");
  EXPECT_EQ(r.status().fields(), std::vector<std::string>{"classify"});
  EXPECT_EQ(s.destroyed, 0);
}

TEST(CClassifier, UnknownVersionIsInvalidArgument) {
  Script s;
  for (uint32_t v : {0u, 2u, 99u}) {
    humus_classifier t = table_for(s);
    t.version = v;
    const Result<std::shared_ptr<const Classifier>> r = capi::make_c_classifier(t);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("version " + std::to_string(v)), std::string::npos);
    EXPECT_EQ(r.status().fields(), std::vector<std::string>{"version"});
  }
  EXPECT_EQ(s.destroyed, 0);
}

TEST(CClassifier, PassesTheAnswerThrough) {
  Script s;
  s.answer = {HUMUS_RETRY_AGAIN, HUMUS_BREAKER_IGNORED, 1500};
  const std::shared_ptr<const Classifier> c = make(table_for(s));
  Attempt a;
  a.status = 418;
  const Result<Classification> r = c->classify(a);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->retry, RetryVerdict::kAgain);
  EXPECT_EQ(r->breaker, breaker::Outcome::kIgnored);
  EXPECT_EQ(r->retry_after, milliseconds(1500));
}

TEST(CClassifier, HugeRetryAfterSaturates) {
  Script s;
  s.answer = {HUMUS_RETRY_AGAIN, HUMUS_BREAKER_FAILURE, INT64_MAX};
  Attempt a;
  a.status = 503;
  const Result<Classification> r = make(table_for(s))->classify(a);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->retry_after, retry::kMaxRetryAfter);
}

TEST(CClassifier, InvalidClassificationsAreProgramErrorsNamingTheField) {
  struct Case {
    humus_classification answer;
    std::vector<std::string> fields;
  };
  const Case cases[] = {
      {{0, HUMUS_BREAKER_SUCCESS, 0}, {"retry"}},
      {{3, HUMUS_BREAKER_SUCCESS, 0}, {"retry"}},
      {{-1, HUMUS_BREAKER_SUCCESS, 0}, {"retry"}},
      {{HUMUS_RETRY_DONE, 0, 0}, {"breaker"}},
      {{HUMUS_RETRY_DONE, 4, 0}, {"breaker"}},
      {{HUMUS_RETRY_AGAIN, HUMUS_BREAKER_FAILURE, -1}, {"retry_after_ms"}},
      {{HUMUS_RETRY_DONE, HUMUS_BREAKER_FAILURE, INT64_MIN}, {"retry_after_ms"}},
      {{0, 0, -5}, {"retry", "breaker", "retry_after_ms"}},
  };
  for (const Case& k : cases) {
    Script s;
    s.answer = k.answer;
    Attempt a;
    a.status = 200;
    const Result<Classification> r = make(table_for(s))->classify(a);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(static_cast<humus_status>(r.status().code()), HUMUS_E_PROGRAM);
    EXPECT_EQ(r.status().fields(), k.fields);
    for (const std::string& f : k.fields) EXPECT_NE(r.status().message().find(f + " = "), std::string::npos);
  }
}

TEST(CClassifier, CallbackFailureIsCallbackError) {
  Script s;
  s.rc = HUMUS_E_INTERNAL;
  Attempt a;
  a.status = 200;
  const Result<Classification> r = make(table_for(s))->classify(a);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(static_cast<humus_status>(r.status().code()), HUMUS_E_CALLBACK);
  EXPECT_NE(r.status().message().find("HUMUS_E_INTERNAL"), std::string::npos);
}

TEST(CClassifier, SeesTheResponseThroughTheAccessors) {
  Script s;
  const std::shared_ptr<const Classifier> c = make(table_for(s));
  Headers h;
  h.add("Retry-After", "12");
  const std::string method_buffer = "GETX";  // the view is not NUL-terminated where it ends
  Attempt a;
  a.method = std::string_view(method_buffer).substr(0, 3);
  a.status = 503;
  a.headers = &h;
  a.number = 2;
  ASSERT_TRUE(c->classify(a).ok());
  EXPECT_EQ(s.method, "GET");
  EXPECT_EQ(s.status, 503);
  EXPECT_EQ(s.retry_after, "12");
  EXPECT_EQ(s.error, HUMUS_OK);
  EXPECT_EQ(s.error_message, "");
  EXPECT_EQ(s.number, 2);
}

TEST(CClassifier, SeesTheErrorThroughTheAccessors) {
  Script s;
  const std::shared_ptr<const Classifier> c = make(table_for(s));
  const std::string message_buffer = "connection refusedXYZ";
  Attempt a;
  a.method = "POST";
  a.error = Code::kConnect;
  a.error_message = std::string_view(message_buffer).substr(0, 18);
  ASSERT_TRUE(c->classify(a).ok());
  EXPECT_EQ(s.method, "POST");
  EXPECT_EQ(s.status, 0);
  EXPECT_TRUE(s.retry_after_null);
  EXPECT_EQ(s.error, HUMUS_E_CONNECT);
  EXPECT_EQ(s.error_message, "connection refused");
  EXPECT_EQ(s.number, 1);
}

TEST(CClassifier, DelegatesToTheDefaultThroughItsAttempt) {
  Script s;
  const std::shared_ptr<const Classifier> c = make(table_for(s, delegating));
  Headers h;
  h.add("Retry-After", "2");
  Attempt a;
  a.status = 503;
  a.headers = &h;
  Result<Classification> r = c->classify(a);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->retry, RetryVerdict::kAgain);
  EXPECT_EQ(r->breaker, breaker::Outcome::kFailure);
  EXPECT_EQ(r->retry_after, seconds(2));

  a.status = 409;
  r = c->classify(a);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->retry, RetryVerdict::kAgain);
  EXPECT_EQ(r->breaker, breaker::Outcome::kSuccess);

  Attempt e;
  e.error = Code::kTls;
  r = c->classify(e);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->retry, RetryVerdict::kDone);
  EXPECT_EQ(r->breaker, breaker::Outcome::kFailure);
  EXPECT_EQ(s.calls, 3);
}

TEST(CapiAttempt, NullAttemptReadsAsNothing) {
  EXPECT_STREQ(humus_attempt_method(nullptr), "");
  EXPECT_EQ(humus_attempt_status(nullptr), 0);
  EXPECT_EQ(humus_attempt_header(nullptr, "Retry-After"), nullptr);
  EXPECT_EQ(humus_attempt_error(nullptr), HUMUS_OK);
  EXPECT_STREQ(humus_attempt_error_message(nullptr), "");
  EXPECT_EQ(humus_attempt_number(nullptr), 0);
}

TEST(CapiAttempt, HeaderLookup) {
  Headers h;
  h.add("X-One", "1");
  Attempt a;
  a.status = 200;
  a.headers = &h;
  const humus_attempt view(a);
  EXPECT_STREQ(humus_attempt_header(&view, "x-one"), "1");
  EXPECT_EQ(humus_attempt_header(&view, "x-two"), nullptr);
  EXPECT_EQ(humus_attempt_header(&view, nullptr), nullptr);
  Attempt no_headers;
  no_headers.status = 200;
  const humus_attempt bare(no_headers);
  EXPECT_EQ(humus_attempt_header(&bare, "x-one"), nullptr);
}

TEST(CapiClassify, DefaultAndPresets) {
  Headers h;
  h.add("Retry-After", "1");
  Attempt a;
  a.status = 429;
  a.headers = &h;
  const humus_attempt view(a);
  humus_classification out{};
  ASSERT_EQ(humus_classify_default(&view, &out), HUMUS_OK);
  EXPECT_EQ(out.retry, HUMUS_RETRY_AGAIN);
  EXPECT_EQ(out.breaker, HUMUS_BREAKER_SUCCESS);
  EXPECT_EQ(out.retry_after_ms, 1000);
  ASSERT_EQ(humus_classify_preset("jfast", &view, &out), HUMUS_OK);
  EXPECT_EQ(out.breaker, HUMUS_BREAKER_IGNORED);
  ASSERT_EQ(humus_classify_preset("strict", &view, &out), HUMUS_OK);
  EXPECT_EQ(out.breaker, HUMUS_BREAKER_FAILURE);
  ASSERT_EQ(humus_classify_preset("humus", &view, &out), HUMUS_OK);
  EXPECT_EQ(out.breaker, HUMUS_BREAKER_SUCCESS);
}

TEST(CapiClassify, SubMillisecondRetryAfterRoundsUp) {
  Headers h;
  h.add("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT");
  Attempt a;
  a.status = 503;
  a.headers = &h;
  a.now = WallTime(seconds(784111777)) - std::chrono::microseconds(1500);
  const humus_attempt view(a);
  humus_classification out{};
  ASSERT_EQ(humus_classify_default(&view, &out), HUMUS_OK);
  EXPECT_EQ(out.retry_after_ms, 2);
}

TEST(CapiClassify, UnknownPresetIsInvalidArgument) {
  Attempt a;
  a.status = 200;
  const humus_attempt view(a);
  humus_classification out{7, 7, 7};
  EXPECT_EQ(humus_classify_preset("lenient", &view, &out), HUMUS_E_INVALID_ARGUMENT);
  ASSERT_NE(humus_last_error(), nullptr);
  EXPECT_NE(std::string(humus_error_message(humus_last_error())).find("\"lenient\""), std::string::npos);
  EXPECT_EQ(out.retry, 7);  // outputs are written only on success
}

TEST(CapiClassify, NullArgumentsAreInvalid) {
  Attempt a;
  a.status = 200;
  const humus_attempt view(a);
  humus_classification out{};
  EXPECT_EQ(humus_classify_default(nullptr, &out), HUMUS_E_MISUSE);  // NULL is no attempt
  EXPECT_EQ(humus_classify_default(&view, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_classify_preset(nullptr, &view, &out), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_classify_preset("humus", nullptr, &out), HUMUS_E_MISUSE);
  EXPECT_EQ(humus_classify_preset("humus", &view, nullptr), HUMUS_E_INVALID_ARGUMENT);
  ASSERT_NE(humus_last_error(), nullptr);
  EXPECT_EQ(humus_error_status(humus_last_error()), HUMUS_E_INVALID_ARGUMENT);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::classify
