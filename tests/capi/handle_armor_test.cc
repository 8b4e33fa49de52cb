// Handle armor through the C ABI alone: every function that takes a handle, given a freed one or a foreign
// pointer (a stack buffer), returns HUMUS_E_MISUSE or its documented neutral value, or does nothing — with no
// read of the memory behind it, which the asan-ubsan preset checks.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>

#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

// What the mock transport lent, kept past its callback: a freed mock request and reply, and the attempt the
// classifier saw. Atomic: the callbacks run on the runtime's loop thread, and the submitted call's may still be
// writing while the test thread reads what the blocking call kept.
struct Kept {
  std::atomic<const humus_mock_request*> request{nullptr};
  std::atomic<humus_mock_reply*> reply{nullptr};
  std::atomic<const humus_attempt*> attempt{nullptr};
  std::atomic<humus_attempt_request*> attempt_request{nullptr};
};
Kept g_kept;

humus_status keep_and_answer(void*, const humus_mock_request* request, humus_mock_reply* reply) {
  g_kept.request = request;
  g_kept.reply = reply;
  humus_mock_reply_set_status(reply, 200);
  return HUMUS_OK;
}

humus_status keep_attempt(void*, const humus_attempt* a, humus_classification* out) {
  g_kept.attempt = a;
  return humus_classify_default(a, out);
}

humus_status keep_attempt_request(void*, humus_attempt_request* r) {
  g_kept.attempt_request = r;
  return HUMUS_OK;
}

// One bad pointer of every handle type: freed ones, or pointers into a buffer that holds no handle.
struct Bad {
  humus_runtime* rt;
  humus_settings* settings;
  humus_client* client;
  humus_request* request;
  humus_response* response;
  humus_cancel* cancel;
  humus_call* call;
  humus_upstreams* upstreams;
  humus_error* error;
  const humus_attempt* attempt;
  humus_attempt_request* attempt_request;
  const humus_mock_request* mock_request;
  humus_mock_reply* mock_reply;
};

void done_free(void*, humus_status, humus_response* resp, humus_error* err) {
  humus_response_free(resp);
  humus_error_free(err);
}

// Makes one live handle of every type (each used once, so the lent views exist), then frees them all.
Bad freed_handles() {
  Bad b{};
  const char* options = R"({"clock": "virtual"})";
  EXPECT_EQ(humus_runtime_new(options, std::strlen(options), &b.rt, nullptr), HUMUS_OK);
  humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
  mock.respond = keep_and_answer;
  EXPECT_EQ(humus_runtime_set_mock_transport(b.rt, &mock, nullptr), HUMUS_OK);
  const char* json = R"({"base_url": "http://payments:8080"})";
  EXPECT_EQ(humus_settings_from_json(json, std::strlen(json), &b.settings, nullptr), HUMUS_OK);
  humus_classifier classifier = HUMUS_CLASSIFIER_INIT;
  classifier.classify = keep_attempt;
  EXPECT_EQ(humus_settings_set_classifier(b.settings, &classifier, nullptr), HUMUS_OK);
  humus_attempt_hooks hooks = HUMUS_ATTEMPT_HOOKS_INIT;
  hooks.before = keep_attempt_request;
  EXPECT_EQ(humus_settings_set_attempt_hooks(b.settings, &hooks, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_client_new(b.rt, b.settings, &b.client, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_request_new("GET", "http://payments:8080/", &b.request, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_cancel_new(&b.cancel), HUMUS_OK);
  EXPECT_EQ(humus_client_do(b.client, b.request, &b.response, nullptr), HUMUS_OK);
  b.attempt = g_kept.attempt;
  b.attempt_request = g_kept.attempt_request;
  b.mock_request = g_kept.request;
  b.mock_reply = g_kept.reply;
  EXPECT_EQ(humus_client_submit(b.client, b.request, done_free, nullptr, &b.call, nullptr), HUMUS_OK);
  const char* upstreams = R"({"upstreams": {"billing": {"base_url": "http://billing:8080"}}})";
  EXPECT_EQ(humus_upstreams_from_json(b.rt, upstreams, std::strlen(upstreams), &b.upstreams, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_request_new("GET", nullptr, nullptr, &b.error), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_NE(b.attempt, nullptr);
  EXPECT_NE(b.attempt_request, nullptr);
  EXPECT_NE(b.mock_request, nullptr);

  humus_error_free(b.error);
  humus_upstreams_free(b.upstreams);
  humus_call_free(b.call);
  humus_cancel_free(b.cancel);
  humus_response_free(b.response);
  humus_request_free(b.request);
  humus_client_free(b.client);
  humus_settings_free(b.settings);
  humus_runtime_free(b.rt);
  return b;
}

Bad foreign_pointers(unsigned char* buffer) {
  Bad b{};
  b.rt = reinterpret_cast<humus_runtime*>(buffer);
  b.settings = reinterpret_cast<humus_settings*>(buffer);
  b.client = reinterpret_cast<humus_client*>(buffer);
  b.request = reinterpret_cast<humus_request*>(buffer);
  b.response = reinterpret_cast<humus_response*>(buffer);
  b.cancel = reinterpret_cast<humus_cancel*>(buffer);
  b.call = reinterpret_cast<humus_call*>(buffer);
  b.upstreams = reinterpret_cast<humus_upstreams*>(buffer);
  b.error = reinterpret_cast<humus_error*>(buffer);
  b.attempt = reinterpret_cast<const humus_attempt*>(buffer);
  b.attempt_request = reinterpret_cast<humus_attempt_request*>(buffer);
  b.mock_request = reinterpret_cast<const humus_mock_request*>(buffer);
  b.mock_reply = reinterpret_cast<humus_mock_reply*>(buffer);
  return b;
}

void ignore_record(void*, const humus_log_record*) {}
void ignore_span(void*, const humus_span*) {}
humus_status ignore_point(void*, const humus_metric_point*) { return HUMUS_OK; }
humus_status answer(void*, const humus_mock_request*, humus_mock_reply*) { return HUMUS_OK; }
humus_status classify(void*, const humus_attempt*, humus_classification*) { return HUMUS_OK; }
humus_status trip(void*, const humus_breaker_counts*, int32_t*) { return HUMUS_OK; }
humus_status before(void*, humus_attempt_request*) { return HUMUS_OK; }
humus_status read_none(void*, void*, size_t, size_t* n) {
  *n = 0;
  return HUMUS_OK;
}

// A status-returning call on a bad handle: HUMUS_E_MISUSE with an error naming `field`. Takes the error by
// address, so it is read after the call (argument order is unspecified) and reset for the next one.
void expect_misuse(humus_status st, humus_error** err, const char* field) {
  EXPECT_EQ(st, HUMUS_E_MISUSE);
  ASSERT_NE(*err, nullptr);
  EXPECT_EQ(humus_error_status(*err), HUMUS_E_MISUSE);
  EXPECT_STREQ(humus_error_field(*err, 0), field);
  humus_error_free(*err);
  *err = nullptr;
}

// Every handle-taking function of the header, each given the bad handle of its type.
void call_everything(const Bad& b) {
  humus_error* err = nullptr;
  char* text = nullptr;
  humus_runtime* rt_out = nullptr;
  (void)rt_out;

  // Errors: neutral values, and the free does nothing.
  EXPECT_EQ(humus_error_status(b.error), HUMUS_OK);
  EXPECT_STREQ(humus_error_message(b.error), "");
  EXPECT_EQ(humus_error_attempts(b.error), 0);
  EXPECT_EQ(humus_error_field_count(b.error), 0u);
  EXPECT_EQ(humus_error_field(b.error, 0), nullptr);
  EXPECT_EQ(humus_error_retry_after_ms(b.error), 0);
  humus_error_free(b.error);

  // Settings.
  humus_settings* s_out = nullptr;
  expect_misuse(humus_settings_clone(b.settings, &s_out, &err), &err, "s");
  EXPECT_EQ(s_out, nullptr);
  expect_misuse(humus_settings_to_json(b.settings, &text, nullptr, &err), &err, "s");
  EXPECT_EQ(text, nullptr);
  humus_classifier classifier = HUMUS_CLASSIFIER_INIT;
  classifier.classify = classify;
  expect_misuse(humus_settings_set_classifier(b.settings, &classifier, &err), &err, "s");
  humus_breaker_policy policy = HUMUS_BREAKER_POLICY_INIT;
  policy.trip = trip;
  policy.probe = trip;
  expect_misuse(humus_settings_set_breaker_policy(b.settings, &policy, &err), &err, "s");
  humus_attempt_hooks hooks = HUMUS_ATTEMPT_HOOKS_INIT;
  hooks.before = before;
  expect_misuse(humus_settings_set_attempt_hooks(b.settings, &hooks, &err), &err, "s");
  humus_settings_free(b.settings);

  // Attempts: neutral values; the classifiers refuse.
  humus_classification out{7, 7, 7};
  EXPECT_STREQ(humus_attempt_method(b.attempt), "");
  EXPECT_EQ(humus_attempt_status(b.attempt), 0);
  EXPECT_EQ(humus_attempt_header(b.attempt, "Retry-After"), nullptr);
  EXPECT_EQ(humus_attempt_header_count(b.attempt), 0u);
  EXPECT_EQ(humus_attempt_header_name(b.attempt, 0), nullptr);
  EXPECT_EQ(humus_attempt_header_value(b.attempt, 0), nullptr);
  EXPECT_EQ(humus_attempt_error(b.attempt), HUMUS_OK);
  EXPECT_STREQ(humus_attempt_error_message(b.attempt), "");
  EXPECT_EQ(humus_attempt_number(b.attempt), 0);
  EXPECT_EQ(humus_classify_default(b.attempt, &out), HUMUS_E_MISUSE);
  EXPECT_EQ(humus_classify_preset("humus", b.attempt, &out), HUMUS_E_MISUSE);
  EXPECT_EQ(out.retry, 7);

  // An attempt's request kept past its `before` hook: neutral values; the setter refuses.
  EXPECT_STREQ(humus_attempt_request_method(b.attempt_request), "");
  EXPECT_STREQ(humus_attempt_request_url(b.attempt_request), "");
  EXPECT_EQ(humus_attempt_request_number(b.attempt_request), 0);
  EXPECT_EQ(humus_attempt_request_header_count(b.attempt_request), 0u);
  EXPECT_EQ(humus_attempt_request_header_name(b.attempt_request, 0), nullptr);
  EXPECT_EQ(humus_attempt_request_header_value(b.attempt_request, 0), nullptr);
  expect_misuse(humus_attempt_request_set_header(b.attempt_request, "X-A", "1", &err), &err, "r");

  // Runtime.
  expect_misuse(humus_runtime_advance_ms(b.rt, 1, &err), &err, "rt");
  EXPECT_EQ(humus_runtime_elapsed_ms(b.rt), -1);
  int loop_fd = -7;
  int64_t next_us = -7;
  expect_misuse(humus_runtime_loop_fd(b.rt, &loop_fd, &err), &err, "rt");
  expect_misuse(humus_runtime_loop_run(b.rt, &next_us, &err), &err, "rt");
  EXPECT_EQ(loop_fd, -7);
  EXPECT_EQ(next_us, -7);
  humus_client* c_out = nullptr;
  const char* json = R"({"base_url": "http://payments:8080"})";
  humus_settings* good = nullptr;
  ASSERT_EQ(humus_settings_from_json(json, std::strlen(json), &good, nullptr), HUMUS_OK);
  expect_misuse(humus_client_new(b.rt, good, &c_out, &err), &err, "rt");
  humus_settings_free(good);
  humus_log_sink log = HUMUS_LOG_SINK_INIT;
  log.record = ignore_record;
  expect_misuse(humus_runtime_set_log_sink(b.rt, &log, &err), &err, "rt");
  humus_span_sink span = HUMUS_SPAN_SINK_INIT;
  span.span = ignore_span;
  expect_misuse(humus_runtime_set_span_sink(b.rt, &span, &err), &err, "rt");
  humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
  mock.respond = answer;
  expect_misuse(humus_runtime_set_mock_transport(b.rt, &mock, &err), &err, "rt");
  expect_misuse(humus_runtime_metrics_prometheus(b.rt, &text, nullptr, &err), &err, "rt");
  expect_misuse(humus_runtime_metrics_json(b.rt, &text, nullptr, &err), &err, "rt");
  expect_misuse(humus_runtime_metrics_collect(b.rt, ignore_point, nullptr, &err), &err, "rt");
  expect_misuse(humus_runtime_readiness_json(b.rt, &text, nullptr, &err), &err, "rt");
  humus_upstreams* u_out = nullptr;
  expect_misuse(humus_upstreams_from_json(b.rt, "{}", 2, &u_out, &err), &err, "rt");
  EXPECT_EQ(text, nullptr);
  EXPECT_EQ(c_out, nullptr);
  EXPECT_EQ(u_out, nullptr);
  humus_runtime_free(b.rt);

  // Client (with a live request, so only the client is wrong).
  humus_request* live_req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/", &live_req, nullptr), HUMUS_OK);
  int32_t state = -7;
  EXPECT_EQ(humus_client_breaker_state(b.client, &state), HUMUS_E_MISUSE);
  EXPECT_EQ(state, -7);
  humus_breaker_counts counts = HUMUS_BREAKER_COUNTS_INIT;
  EXPECT_EQ(humus_client_breaker_counts(b.client, &counts), HUMUS_E_MISUSE);
  double tokens = -7;
  EXPECT_EQ(humus_client_budget_tokens(b.client, &tokens), HUMUS_E_MISUSE);
  EXPECT_EQ(tokens, -7);
  humus_response* resp = nullptr;
  expect_misuse(humus_client_do(b.client, live_req, &resp, &err), &err, "c");
  expect_misuse(humus_client_open(b.client, live_req, &resp, &err), &err, "c");
  humus_call* call = nullptr;
  expect_misuse(humus_client_submit(b.client, live_req, done_free, nullptr, &call, &err), &err, "c");
  EXPECT_EQ(resp, nullptr);
  EXPECT_EQ(call, nullptr);
  humus_request_free(live_req);
  humus_client_free(b.client);

  // Request (on a live client, so only the request is wrong).
  humus_runtime* rt = nullptr;
  const char* options = R"({"clock": "virtual"})";
  ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt, nullptr), HUMUS_OK);
  ASSERT_EQ(humus_runtime_set_mock_transport(rt, &mock, nullptr), HUMUS_OK);
  ASSERT_EQ(humus_settings_from_json(json, std::strlen(json), &good, nullptr), HUMUS_OK);
  humus_client* live_client = nullptr;
  ASSERT_EQ(humus_client_new(rt, good, &live_client, nullptr), HUMUS_OK);
  humus_settings_free(good);
  expect_misuse(humus_request_set_header(b.request, "X-A", "1", &err), &err, "r");
  EXPECT_EQ(humus_request_set_body(b.request, "x", 1), HUMUS_E_MISUSE);
  humus_body_reader reader = HUMUS_BODY_READER_INIT;
  reader.read = read_none;
  expect_misuse(humus_request_set_body_reader(b.request, &reader, &err), &err, "r");
  expect_misuse(humus_request_set_idempotency_key(b.request, "k", &err), &err, "r");
  expect_misuse(humus_request_set_retry(b.request, HUMUS_RETRY_MODE_FORBID, &err), &err, "r");
  expect_misuse(humus_request_set_timeout_ms(b.request, 100, &err), &err, "r");
  expect_misuse(humus_request_set_follow_redirects(b.request, 0, &err), &err, "r");
  expect_misuse(humus_request_set_context(b.request, nullptr, nullptr, "a=b", nullptr, nullptr, &err), &err, "r");
  expect_misuse(humus_request_set_attempt_hooks(b.request, &hooks, &err), &err, "r");
  humus_cancel* live_cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&live_cancel), HUMUS_OK);
  EXPECT_EQ(humus_request_set_cancel(b.request, live_cancel), HUMUS_E_MISUSE);
  expect_misuse(humus_client_do(live_client, b.request, &resp, &err), &err, "r");
  expect_misuse(humus_client_open(live_client, b.request, &resp, &err), &err, "r");
  expect_misuse(humus_client_submit(live_client, b.request, done_free, nullptr, &call, &err), &err, "r");
  humus_request_free(b.request);

  // Cancel tokens.
  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/", &live_req, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_request_set_cancel(live_req, b.cancel), HUMUS_E_MISUSE);
  humus_cancel_trigger(b.cancel);
  humus_cancel_free(b.cancel);
  humus_request_free(live_req);
  humus_cancel_free(live_cancel);

  // Responses.
  char buf[16];
  size_t n = 99;
  expect_misuse(humus_response_read(b.response, buf, sizeof buf, &n, &err), &err, "resp");
  int wait_fd = -7;
  int64_t wait_ms = -7;
  expect_misuse(humus_response_read_ready(b.response, buf, sizeof buf, &n, &wait_fd, &wait_ms, &err), &err,
                "resp");
  EXPECT_EQ(wait_fd, -7);
  EXPECT_EQ(n, 99u);
  int whole = -7;
  expect_misuse(humus_response_read_ahead(b.response, 0, [](void*, humus_response*) {}, nullptr, &whole, &err), &err,
                "resp");
  EXPECT_EQ(whole, -7);
  int32_t took = -7;
  expect_misuse(humus_response_take(b.response, buf, sizeof buf, 0, &n, &took, &err), &err, "resp");
  EXPECT_EQ(took, -7);
  EXPECT_EQ(n, 99u);
  humus_response_hurry(b.response);  // nothing, and no crash
  EXPECT_EQ(humus_response_status(b.response), 0);
  EXPECT_EQ(humus_response_attempts(b.response), 0);
  EXPECT_EQ(humus_response_header(b.response, "Content-Type"), nullptr);
  EXPECT_EQ(humus_response_header_count(b.response), 0u);
  const char* name = nullptr;
  const char* value = nullptr;
  EXPECT_EQ(humus_response_header_at(b.response, 0, &name, &value), HUMUS_E_MISUSE);
  EXPECT_EQ(name, nullptr);
  const void* data = nullptr;
  size_t len = 99;
  expect_misuse(humus_response_body(b.response, &data, &len, &err), &err, "resp");
  EXPECT_EQ(len, 99u);
  EXPECT_STREQ(humus_response_http_version(b.response), "");
  EXPECT_STREQ(humus_response_url(b.response), "");
  EXPECT_EQ(humus_response_redirect_count(b.response), 0u);
  int32_t redirect_status = 0;
  EXPECT_EQ(humus_response_redirect_at(b.response, 0, &redirect_status, &name), HUMUS_E_MISUSE);
  humus_response_free(b.response);
  humus_response_close(b.response);

  // Calls.
  humus_call_cancel(b.call);
  humus_call_free(b.call);

  // Upstreams.
  humus_client* from_registry = nullptr;
  expect_misuse(humus_upstreams_client(b.upstreams, "billing", &from_registry, &err), &err, "u");
  EXPECT_EQ(from_registry, nullptr);
  EXPECT_EQ(humus_upstreams_count(b.upstreams), 0u);
  EXPECT_EQ(humus_upstreams_name(b.upstreams, 0), nullptr);
  expect_misuse(humus_upstreams_readiness_json(b.upstreams, &text, nullptr, &err), &err, "u");
  humus_upstreams_free(b.upstreams);

  // The mock transport's lent views: neutral values, and the setters do nothing.
  EXPECT_STREQ(humus_mock_request_method(b.mock_request), "");
  EXPECT_STREQ(humus_mock_request_url(b.mock_request), "");
  EXPECT_EQ(humus_mock_request_header(b.mock_request, "Host"), nullptr);
  data = &n;
  len = 99;
  humus_mock_request_body(b.mock_request, &data, &len);
  EXPECT_EQ(data, nullptr);
  EXPECT_EQ(len, 0u);
  humus_mock_reply_set_status(b.mock_reply, 500);
  humus_mock_reply_add_header(b.mock_reply, "X-A", "1");
  humus_mock_reply_set_body(b.mock_reply, "x", 1);
  humus_mock_reply_set_error(b.mock_reply, HUMUS_E_CONNECT, "refused");
  humus_mock_reply_set_delay_ms(b.mock_reply, 5);
  humus_mock_reply_set_hang(b.mock_reply);

  humus_client_free(live_client);
  humus_runtime_free(rt);
}

TEST(HandleArmor, EveryFunctionRefusesFreedHandles) {
  // Each *_free in here is the handle's second: freed_handles() freed them all once already. (Not run twice:
  // the errors made by the first pass reuse freed addresses, which the header says a check cannot tell.)
  call_everything(freed_handles());
}

TEST(HandleArmor, EveryFunctionRefusesForeignPointers) {
  alignas(64) unsigned char buffer[1024];
  std::memset(buffer, 0x68, sizeof buffer);  // 'h': the first byte of every magic word, to tempt a lax check
  call_everything(foreign_pointers(buffer));
  for (unsigned char byte : buffer) ASSERT_EQ(byte, 0x68) << "a refused call wrote into the caller's memory";
}

TEST(HandleArmor, NullHandlesAreMisuse) {
  humus_error* err = nullptr;
  expect_misuse(humus_client_do(nullptr, nullptr, nullptr, &err), &err, "c");
  expect_misuse(humus_runtime_advance_ms(nullptr, 1, &err), &err, "rt");
  EXPECT_EQ(humus_runtime_elapsed_ms(nullptr), -1);
  int loop_fd = -1;
  int64_t next_us = 0;
  expect_misuse(humus_runtime_loop_fd(nullptr, &loop_fd, &err), &err, "rt");
  expect_misuse(humus_runtime_loop_run(nullptr, &next_us, &err), &err, "rt");
  EXPECT_EQ(humus_request_set_body(nullptr, nullptr, 0), HUMUS_E_MISUSE);
  humus_runtime_free(nullptr);
  humus_client_free(nullptr);
  humus_call_free(nullptr);
}

TEST(HandleArmor, AHandleOfAnotherTypeIsMisuse) {
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/", &req, nullptr), HUMUS_OK);
  humus_error* err = nullptr;
  // A live request is no client, no response, no cancel token.
  expect_misuse(humus_client_do(reinterpret_cast<humus_client*>(req), req, nullptr, &err), &err, "c");
  EXPECT_EQ(humus_response_status(reinterpret_cast<humus_response*>(req)), 0);
  humus_response_free(reinterpret_cast<humus_response*>(req));  // not freed as a response
  humus_response_close(reinterpret_cast<humus_response*>(req));
  EXPECT_EQ(humus_request_set_cancel(req, reinterpret_cast<humus_cancel*>(req)), HUMUS_E_MISUSE);
  ASSERT_EQ(humus_request_set_header(req, "X-Still", "live", nullptr), HUMUS_OK);
  humus_request_free(req);
  humus_request_free(req);  // a double free is harmless
}

TEST(HandleArmor, ARegistryClientIsNotFreedByHumusClientFree) {
  humus_runtime* rt = nullptr;
  ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt, nullptr), HUMUS_OK);
  const char* json = R"({"upstreams": {"billing": {"base_url": "http://billing:8080"}}})";
  humus_upstreams* u = nullptr;
  ASSERT_EQ(humus_upstreams_from_json(rt, json, std::strlen(json), &u, nullptr), HUMUS_OK);
  humus_client* c = nullptr;
  ASSERT_EQ(humus_upstreams_client(u, "billing", &c, nullptr), HUMUS_OK);
  humus_client_free(c);  // the registry's, not the caller's: ignored
  int32_t state = -1;
  EXPECT_EQ(humus_client_breaker_state(c, &state), HUMUS_OK);
  EXPECT_EQ(state, HUMUS_CIRCUIT_CLOSED);
  humus_upstreams_free(u);
  EXPECT_EQ(humus_client_breaker_state(c, &state), HUMUS_E_MISUSE);  // gone with its registry
  humus_runtime_free(rt);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
