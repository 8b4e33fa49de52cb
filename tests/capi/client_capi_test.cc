// The runtime, client, request, response and mock transport through the C ABI alone (Appendix A).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

struct Scripted {
  std::atomic<int> calls{0};
  std::atomic<int> destroyed{0};
  int fail_first = 0;  // answer 503 this many times, then 200
  int redirect_first = 0;  // before that, answer 302 to /hopN this many times
  std::string last_key;
};

humus_status respond(void* user, const humus_mock_request* req, humus_mock_reply* reply) {
  auto* s = static_cast<Scripted*>(user);
  const int n = ++s->calls;
  const char* key = humus_mock_request_header(req, "Idempotency-Key");
  s->last_key = key != nullptr ? key : "";
  if (n <= s->redirect_first) {
    humus_mock_reply_set_status(reply, 302);
    humus_mock_reply_add_header(reply, "Location", ("/hop" + std::to_string(n)).c_str());
    return HUMUS_OK;
  }
  if (n - s->redirect_first <= s->fail_first) {
    humus_mock_reply_set_status(reply, 503);
    humus_mock_reply_add_header(reply, "Retry-After", "1");
    return HUMUS_OK;
  }
  humus_mock_reply_set_status(reply, 200);
  humus_mock_reply_add_header(reply, "Content-Type", "text/plain");
  humus_mock_reply_set_body(reply, "paid", 4);
  return HUMUS_OK;
}

void count_destroy(void* user) { ++static_cast<Scripted*>(user)->destroyed; }

class CapiClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* options = R"({"clock": "virtual", "seed": 1})";
    ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt_, nullptr), HUMUS_OK);
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = respond;
    mock.user_data = &script_;
    mock.destroy = count_destroy;
    ASSERT_EQ(humus_runtime_set_mock_transport(rt_, &mock, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    humus_client_free(client_);
    humus_runtime_free(rt_);
    EXPECT_EQ(script_.destroyed.load(), 1);
  }

  void make_client(const char* json) {
    humus_settings* s = nullptr;
    ASSERT_EQ(humus_settings_from_json(json, std::strlen(json), &s, nullptr), HUMUS_OK);
    ASSERT_EQ(humus_client_new(rt_, s, &client_, nullptr), HUMUS_OK);
    humus_settings_free(s);
  }

  Scripted script_;
  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
};

TEST_F(CapiClientTest, GetRetriedThrough503WaitsRetryAfterOnVirtualClock) {
  script_.fail_first = 1;
  make_client(R"({"base_url": "https://payments:8443", "max_retry_after": "5s"})");
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "https://payments:8443/v1/charges", &req, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  const int64_t before = humus_runtime_elapsed_ms(rt_);
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_runtime_elapsed_ms(rt_) - before, 1000);
  EXPECT_EQ(humus_response_status(resp), 200);
  EXPECT_EQ(humus_response_attempts(resp), 2);
  EXPECT_STREQ(humus_response_header(resp, "content-type"), "text/plain");
  EXPECT_EQ(humus_response_header(resp, "X-Absent"), nullptr);
  const void* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_response_body(resp, &data, &len, nullptr), HUMUS_OK);
  EXPECT_EQ(std::string(static_cast<const char*>(data), len), "paid");
  ASSERT_EQ(humus_response_header_count(resp), 1u);
  const char* name = nullptr;
  const char* value = nullptr;
  ASSERT_EQ(humus_response_header_at(resp, 0, &name, &value), HUMUS_OK);
  EXPECT_STREQ(name, "Content-Type");
  EXPECT_STREQ(value, "text/plain");
  EXPECT_EQ(humus_response_header_at(resp, 1, &name, &value), HUMUS_E_INVALID_ARGUMENT);
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(CapiClientTest, PostWithIdempotencyKeyIsRetriedAndCarriesTheKey) {
  script_.fail_first = 1;
  make_client(R"({"base_url": "https://payments:8443", "max_retry_after": "5s"})");
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("POST", "https://payments:8443/v1/charges", &req, nullptr), HUMUS_OK);
  ASSERT_EQ(humus_request_set_body(req, "{}", 2), HUMUS_OK);
  ASSERT_EQ(humus_request_set_idempotency_key(req, "order-42", nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_attempts(resp), 2);
  EXPECT_EQ(script_.last_key, "order-42");
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(CapiClientTest, RedirectsFollowedAreListedAndFollowingCanBeTurnedOff) {
  script_.redirect_first = 2;
  make_client(R"({"base_url": "https://payments:8443"})");
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "https://payments:8443/start", &req, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 200);
  EXPECT_STREQ(humus_response_url(resp), "https://payments:8443/hop2");
  ASSERT_EQ(humus_response_redirect_count(resp), 2u);
  int32_t status = 0;
  const char* url = nullptr;
  ASSERT_EQ(humus_response_redirect_at(resp, 0, &status, &url), HUMUS_OK);
  EXPECT_EQ(status, 302);
  EXPECT_STREQ(url, "https://payments:8443/start");
  ASSERT_EQ(humus_response_redirect_at(resp, 1, &status, &url), HUMUS_OK);
  EXPECT_STREQ(url, "https://payments:8443/hop1");
  EXPECT_EQ(humus_response_redirect_at(resp, 2, &status, &url), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_response_redirect_at(resp, 0, nullptr, &url), HUMUS_E_INVALID_ARGUMENT);
  humus_response_free(resp);

  // Off: the first 3xx is the answer, nothing listed, one request on the wire.
  script_.calls = 0;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_request_set_follow_redirects(req, 2, &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(humus_error_message(err), "follow_redirects"), nullptr);
  humus_error_free(err);
  ASSERT_EQ(humus_request_set_follow_redirects(req, 0, nullptr), HUMUS_OK);
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 302);
  EXPECT_STREQ(humus_response_header(resp, "Location"), "/hop1");
  EXPECT_EQ(humus_response_redirect_count(resp), 0u);
  EXPECT_EQ(script_.calls.load(), 1);
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(CapiClientTest, CrossOriginIsRefusedNamingBothOrigins) {
  make_client(R"({"base_url": "https://payments:8443"})");
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "https://ledger:8443/x", &req, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_client_do(client_, req, &resp, &err), HUMUS_E_CROSS_ORIGIN);
  EXPECT_EQ(resp, nullptr);
  ASSERT_NE(err, nullptr);
  EXPECT_STREQ(humus_error_message(err), "request to https://ledger:8443 on a client for https://payments:8443");
  EXPECT_EQ(humus_error_attempts(err), 0);
  EXPECT_EQ(script_.calls.load(), 0);
  humus_error_free(err);
  humus_request_free(req);
}

TEST_F(CapiClientTest, OpenBreakerRejectsWithRetryAfter) {
  script_.fail_first = 1000;
  make_client(R"({"base_url": "http://payments:8080", "max_attempts": 1, "breaker": {"open_for": "30s"}})");
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/", &req, nullptr), HUMUS_OK);
  for (int i = 0; i < 5; ++i) {
    humus_response* resp = nullptr;
    ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
    EXPECT_EQ(humus_response_status(resp), 503);
    humus_response_free(resp);
  }
  int32_t state = -1;
  ASSERT_EQ(humus_client_breaker_state(client_, &state), HUMUS_OK);
  EXPECT_EQ(state, HUMUS_CIRCUIT_OPEN);
  humus_breaker_counts counts = HUMUS_BREAKER_COUNTS_INIT;
  ASSERT_EQ(humus_client_breaker_counts(client_, &counts), HUMUS_OK);
  EXPECT_EQ(counts.version, static_cast<uint32_t>(HUMUS_BREAKER_COUNTS_VERSION));
  EXPECT_EQ(counts.state, HUMUS_CIRCUIT_OPEN);
  humus_breaker_counts unset{};  // version 0: the library cannot know how much the caller has room for
  unset.state = 99;
  EXPECT_EQ(humus_client_breaker_counts(client_, &unset), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(unset.state, 99);  // nothing written
  humus_breaker_counts newer = HUMUS_BREAKER_COUNTS_INIT;
  newer.version = HUMUS_BREAKER_COUNTS_VERSION + 1;
  EXPECT_EQ(humus_client_breaker_counts(client_, &newer), HUMUS_E_INVALID_ARGUMENT);
  double tokens = 0;
  ASSERT_EQ(humus_client_budget_tokens(client_, &tokens), HUMUS_OK);
  EXPECT_DOUBLE_EQ(tokens, 5.0);  // five attempts classified retry (503), one token each, none refilled
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_client_do(client_, req, &resp, &err), HUMUS_E_REJECTED);
  EXPECT_EQ(humus_error_retry_after_ms(err), 30000);
  EXPECT_EQ(script_.calls.load(), 5);
  humus_error_free(err);
  ASSERT_EQ(humus_runtime_advance_ms(rt_, 30000, nullptr), HUMUS_OK);
  ASSERT_EQ(humus_client_breaker_state(client_, &state), HUMUS_OK);
  EXPECT_EQ(state, HUMUS_CIRCUIT_HALF_OPEN);
  humus_request_free(req);
}

// F109
TEST_F(CapiClientTest, BadRequestsAreRefusedNamingWhatWasWrong) {
  make_client(R"({"base_url": "http://payments:8080"})");
  humus_request* req = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_request_new("GE T", "http://payments:8080/", &req, &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_STREQ(humus_error_field(err, 0), "method");
  humus_error_free(err);
  EXPECT_EQ(humus_request_new("GET", "not a url", &req, &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_STREQ(humus_error_field(err, 0), "url");
  humus_error_free(err);
  EXPECT_EQ(humus_request_new("GET", "http://user:pw@payments:8080/", &req, &err), HUMUS_E_INVALID_ARGUMENT);
  humus_error_free(err);
  EXPECT_EQ(humus_request_new("GET", "ftp://payments:8080/", &req, &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(humus_error_message(err), "http or https"), nullptr) << humus_error_message(err);
  humus_error_free(err);

  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/", &req, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_request_set_header(req, "X-Note", "a\r\nInjected: 1", &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_STREQ(humus_error_field(err, 0), "X-Note");
  humus_error_free(err);
  EXPECT_EQ(humus_request_set_header(req, "Bad Name", "v", nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_request_set_retry(req, 7, &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_STREQ(humus_error_field(err, 0), "retry");
  EXPECT_NE(std::strstr(humus_error_message(err), "mode 7"), nullptr) << humus_error_message(err);
  humus_error_free(err);
  EXPECT_EQ(humus_request_set_timeout_ms(req, 0, &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_STREQ(humus_error_field(err, 0), "timeout");
  humus_error_free(err);
  EXPECT_EQ(humus_request_set_timeout_ms(req, -5, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_client_do(client_, nullptr, nullptr, nullptr), HUMUS_E_MISUSE);  // NULL is no request
  humus_request_free(req);
}

TEST_F(CapiClientTest, CallContextIsCheckedAndSent) {
  make_client(R"({"base_url": "http://payments:8080"})");
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/", &req, nullptr), HUMUS_OK);
  humus_error* err = nullptr;
  EXPECT_EQ(humus_request_set_context(req, "00-a\r\nX: y", nullptr, nullptr, nullptr, nullptr, &err),
            HUMUS_E_INVALID_ARGUMENT);
  EXPECT_STREQ(humus_error_field(err, 0), "traceparent");
  humus_error_free(err);
  ASSERT_EQ(humus_request_set_context(req, nullptr, nullptr, "tenant=acme", "req-1", nullptr, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(CapiClientTest, CancelTokenEndsAHangingCall) {
  make_client(R"({"base_url": "http://payments:8080", "timeout": "30s", "attempt_timeout": "20s"})");
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/slow", &req, nullptr), HUMUS_OK);
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  ASSERT_EQ(humus_request_set_cancel(req, cancel), HUMUS_OK);
  humus_cancel_trigger(cancel);  // cancelled before it starts: nothing is sent
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_client_do(client_, req, &resp, &err), HUMUS_E_CANCELLED);
  EXPECT_EQ(script_.calls.load(), 0);
  humus_error_free(err);
  humus_request_free(req);
  humus_cancel_free(cancel);
}

void count_done(void* user, humus_status, humus_response* resp, humus_error* err) {
  humus_response_free(resp);
  humus_error_free(err);
  ++*static_cast<std::atomic<int>*>(user);
}

TEST_F(CapiClientTest, ACallHandleOutlivesItsClientAndRuntime) {
  make_client(R"({"base_url": "http://payments:8080"})");
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/", &req, nullptr), HUMUS_OK);
  std::atomic<int> done{0};
  humus_call* call = nullptr;
  ASSERT_EQ(humus_client_submit(client_, req, count_done, &done, &call, nullptr), HUMUS_OK);
  humus_request_free(req);
  humus_client_free(client_);  // waits for the call to end
  client_ = nullptr;
  humus_runtime_free(rt_);
  rt_ = nullptr;
  EXPECT_EQ(done.load(), 1);
  humus_call_cancel(call);  // the call has ended and its runtime is gone: nothing happens
  humus_call_free(call);
}

TEST(CapiRuntime, OptionsAreCheckedNamingEveryBadKey) {
  const char* options = R"({"clock": "sundial", "resolve": {"payments": 5}, "colour": 1})";
  humus_runtime* rt = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt, &err), HUMUS_E_CONFIG);
  EXPECT_EQ(rt, nullptr);
  EXPECT_EQ(humus_error_field_count(err), 3u);
  humus_error_free(err);
  ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_runtime_advance_ms(rt, 10, nullptr), HUMUS_E_MISUSE);
  humus_runtime_free(rt);
}

TEST(CapiRuntime, VirtualClockClientNeedsTheMock) {
  const char* options = R"({"clock": "virtual"})";
  humus_runtime* rt = nullptr;
  ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt, nullptr), HUMUS_OK);
  const char* json = R"({"base_url": "http://payments:8080"})";
  humus_settings* s = nullptr;
  ASSERT_EQ(humus_settings_from_json(json, std::strlen(json), &s, nullptr), HUMUS_OK);
  humus_client* c = nullptr;
  EXPECT_EQ(humus_client_new(rt, s, &c, nullptr), HUMUS_E_MISUSE);
  humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
  EXPECT_EQ(humus_runtime_set_mock_transport(rt, &mock, nullptr), HUMUS_E_PROGRAM);
  humus_settings_free(s);
  humus_runtime_free(rt);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace

namespace {
namespace HUMUS_UNITY_ID {

struct PolicyState {
  int destroyed = 0;
  int trips = 0;
};

humus_status never_trip(void* user, const humus_breaker_counts* counts, int32_t* open) {
  auto* st = static_cast<PolicyState*>(user);
  ++st->trips;
  EXPECT_EQ(counts->version, static_cast<uint32_t>(HUMUS_BREAKER_COUNTS_VERSION));
  *open = 0;
  return HUMUS_OK;
}
humus_status close_at_once(void*, const humus_breaker_counts*, int32_t* decision) {
  *decision = HUMUS_PROBE_CLOSE;
  return HUMUS_OK;
}
void policy_destroy(void* user) { ++static_cast<PolicyState*>(user)->destroyed; }

humus_status all_fail_no_retry(void*, const humus_attempt* a, humus_classification* out) {
  humus_status rc = humus_classify_default(a, out);  // delegate, then override
  out->retry = HUMUS_RETRY_DONE;
  out->breaker = HUMUS_BREAKER_FAILURE;
  return rc;
}

humus_status always_ok(void*, const humus_mock_request*, humus_mock_reply* reply) {
  humus_mock_reply_set_status(reply, 200);
  return HUMUS_OK;
}

TEST(CapiCallbacks, CodeSuppliedPolicyAndClassifierDriveTheClient) {
  const char* options = R"({"clock": "virtual"})";
  humus_runtime* rt = nullptr;
  ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt, nullptr), HUMUS_OK);
  humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
  mock.respond = always_ok;
  ASSERT_EQ(humus_runtime_set_mock_transport(rt, &mock, nullptr), HUMUS_OK);

  const char* json = R"({"base_url": "http://payments:8080"})";
  humus_settings* s = nullptr;
  ASSERT_EQ(humus_settings_from_json(json, std::strlen(json), &s, nullptr), HUMUS_OK);
  PolicyState state;
  humus_breaker_policy policy = HUMUS_BREAKER_POLICY_INIT;
  policy.trip = never_trip;
  policy.probe = close_at_once;
  policy.user_data = &state;
  policy.destroy = policy_destroy;
  ASSERT_EQ(humus_settings_set_breaker_policy(s, &policy, nullptr), HUMUS_OK);
  humus_classifier classifier = HUMUS_CLASSIFIER_INIT;
  classifier.classify = all_fail_no_retry;
  ASSERT_EQ(humus_settings_set_classifier(s, &classifier, nullptr), HUMUS_OK);

  humus_client* c = nullptr;
  ASSERT_EQ(humus_client_new(rt, s, &c, nullptr), HUMUS_OK);
  humus_settings_free(s);
  EXPECT_EQ(state.destroyed, 0);  // the client still holds the policy

  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/", &req, nullptr), HUMUS_OK);
  for (int i = 0; i < 10; ++i) {  // 10 failures: the default policy would have opened at 5
    humus_response* resp = nullptr;
    ASSERT_EQ(humus_client_do(c, req, &resp, nullptr), HUMUS_OK);
    EXPECT_EQ(humus_response_attempts(resp), 1);
    humus_response_free(resp);
  }
  EXPECT_EQ(state.trips, 10);
  int32_t circuit = -1;
  ASSERT_EQ(humus_client_breaker_state(c, &circuit), HUMUS_OK);
  EXPECT_EQ(circuit, HUMUS_CIRCUIT_CLOSED);
  humus_request_free(req);
  humus_client_free(c);
  EXPECT_EQ(state.destroyed, 1);
  humus_runtime_free(rt);
}

TEST(CapiCallbacks, NullCallbacksAreProgramErrorsAndDestroyIsNotCalled) {
  const char* json = R"({"base_url": "http://payments:8080"})";
  humus_settings* s = nullptr;
  ASSERT_EQ(humus_settings_from_json(json, std::strlen(json), &s, nullptr), HUMUS_OK);
  PolicyState state;
  humus_breaker_policy policy = HUMUS_BREAKER_POLICY_INIT;
  policy.trip = never_trip;
  policy.user_data = &state;
  policy.destroy = policy_destroy;
  EXPECT_EQ(humus_settings_set_breaker_policy(s, &policy, nullptr), HUMUS_E_PROGRAM);
  EXPECT_EQ(humus_settings_set_breaker_policy(s, nullptr, nullptr), HUMUS_E_PROGRAM);
  humus_classifier classifier = HUMUS_CLASSIFIER_INIT;
  EXPECT_EQ(humus_settings_set_classifier(s, &classifier, nullptr), HUMUS_E_PROGRAM);
  EXPECT_EQ(humus_settings_set_classifier(s, nullptr, nullptr), HUMUS_E_PROGRAM);
  humus_settings_free(s);
  EXPECT_EQ(state.destroyed, 0);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
