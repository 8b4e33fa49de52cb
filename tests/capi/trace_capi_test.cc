// The decision trace through the C ABI (docs/trace.md): humus_response_trace and humus_error_trace read a
// call's reasoning, one record per attempt, on the mock transport and virtual clock (whose decisions a seed
// pins) and against the real test server (what reached the wire).
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "humus_http.h"
#include "support/capi_client.h"
#include "support/closed_port.h"
#include "support/test_server.h"

namespace {
namespace HUMUS_UNITY_ID {

using nlohmann::json;

using humus::test::closed_port;

json parsed(char* text, size_t len) {
  EXPECT_EQ(std::strlen(text), len);
  json out = json::parse(text);
  humus_string_free(text);
  return out;
}

json trace_of(const humus_response* resp) {
  char* text = nullptr;
  size_t len = 0;
  EXPECT_EQ(humus_response_trace(resp, &text, &len, nullptr), HUMUS_OK);
  return text != nullptr ? parsed(text, len) : json();
}

json trace_of(const humus_error* err) {
  char* text = nullptr;
  size_t len = 0;
  EXPECT_EQ(humus_error_trace(err, &text, &len), HUMUS_OK);
  return text != nullptr ? parsed(text, len) : json();
}

// 503 with Retry-After: 1 `failures` times, then 200.
struct Script {
  int failures = 0;
  int calls = 0;
};

humus_status respond(void* user, const humus_mock_request*, humus_mock_reply* reply) {
  auto* s = static_cast<Script*>(user);
  if (s->calls++ < s->failures) {
    humus_mock_reply_set_status(reply, 503);
    humus_mock_reply_add_header(reply, "Retry-After", "1");
    return HUMUS_OK;
  }
  humus_mock_reply_set_status(reply, 200);
  return HUMUS_OK;
}

class TraceMockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* options = R"({"clock": "virtual", "seed": 7})";
    ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt_, nullptr), HUMUS_OK);
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = respond;
    mock.user_data = &script_;
    ASSERT_EQ(humus_runtime_set_mock_transport(rt_, &mock, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    humus_client_free(client_);
    humus_runtime_free(rt_);
  }
  humus_status call(humus_response** resp, humus_error** err) {
    humus_request* req = nullptr;
    EXPECT_EQ(humus_request_new("GET", "https://payments:8443/v1/charges?user=a:b", &req, nullptr), HUMUS_OK);
    const humus_status st = humus_client_do(client_, req, resp, err);
    humus_request_free(req);
    return st;
  }

  Script script_;
  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
};

TEST_F(TraceMockTest, A503A503And200CallTellsEachDecisionAndItsWait) {
  script_.failures = 2;
  client_ = humus::testing::new_capi_client(
      rt_, R"({"base_url": "https://payments:8443", "max_attempts": 3, "max_retry_after": "5s", "timeout": "30s"})");
  ASSERT_NE(client_, nullptr);
  humus_response* resp = nullptr;
  ASSERT_EQ(call(&resp, nullptr), HUMUS_OK);
  ASSERT_EQ(humus_response_status(resp), 200);
  const json trace = trace_of(resp);
  humus_response_free(resp);

  ASSERT_EQ(trace.size(), 3u) << trace.dump(2);
  for (size_t i = 0; i < 3; ++i) {
    const json& r = trace[i];
    EXPECT_EQ(r["attempt"], i + 1);
    EXPECT_EQ(r["method"], "GET");
    EXPECT_EQ(r["redirect"], 0);
    EXPECT_EQ(r["resend"], i > 0);
    EXPECT_EQ(r["wire_sends"], 1);
    EXPECT_TRUE(r["error"].is_null());
    EXPECT_EQ(r["breaker"]["state"], "closed");
    EXPECT_EQ(r["breaker"]["generation"], 1);
    EXPECT_EQ(r["breaker_after"]["state"], "closed");
  }
  // The two 503s asked for one second, longer than any backoff draw (backoff_max defaults to 2 s, but the
  // first draws are at most 100 and 200 ms): each wait is the Retry-After, and the virtual clock moved by it.
  for (size_t i = 0; i < 2; ++i) {
    const json& r = trace[i];
    EXPECT_EQ(r["status"], 503);
    EXPECT_EQ(r["retry_verdict"], "again");
    EXPECT_EQ(r["breaker_verdict"], "failure");
    EXPECT_EQ(r["retry_after"], 1.0);
    EXPECT_EQ(r["retry_after_source"], "header");
    EXPECT_EQ(r["decision"], "again");
    EXPECT_EQ(r["wait"], 1.0);
    EXPECT_EQ(r["wait_source"], "retry_after");
  }
  EXPECT_EQ(trace[1]["start"], 1.0);  // after the first wait, on the virtual clock
  EXPECT_EQ(trace[2]["start"], 2.0);
  EXPECT_LT(trace[1]["budget_after"].get<double>(), trace[1]["budget_before"].get<double>());  // a retry's charge
  const json& last = trace[2];
  EXPECT_EQ(last["status"], 200);
  EXPECT_EQ(last["retry_verdict"], "done");
  EXPECT_EQ(last["breaker_verdict"], "success");
  EXPECT_TRUE(last["retry_after"].is_null());
  EXPECT_EQ(last["decision"], "done");
  EXPECT_EQ(last["wait"], 0.0);
  EXPECT_EQ(last["wait_source"], "none");
  EXPECT_EQ(last["deadline_left"], 28.0);
  EXPECT_EQ(last["url"], "https://payments:8443/v1/charges?user=a:b");
}

TEST_F(TraceMockTest, ARejectedCallTellsTheOpenBreakerItMet) {
  script_.failures = 1000;
  client_ = humus::testing::new_capi_client(
      rt_, R"({"base_url": "https://payments:8443", "max_attempts": 1, "breaker": {"open_for": "10s"},
              "trip": {"consecutive_failures": 2}})");
  ASSERT_NE(client_, nullptr);
  for (int i = 0; i < 2; ++i) {
    humus_response* resp = nullptr;
    ASSERT_EQ(call(&resp, nullptr), HUMUS_OK);  // a 503, returned as it came (max_attempts 1)
    const json trace = trace_of(resp);
    humus_response_free(resp);
    ASSERT_EQ(trace.size(), 1u);
    EXPECT_EQ(trace[0]["decision"], "exhausted");
    EXPECT_EQ(trace[0]["breaker_after"]["state"], i == 0 ? "closed" : "open");
  }
  humus_response* none = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(call(&none, &err), HUMUS_E_REJECTED);
  EXPECT_EQ(none, nullptr);
  const json trace = trace_of(err);
  humus_error_free(err);
  ASSERT_EQ(trace.size(), 1u) << trace.dump(2);
  EXPECT_EQ(trace[0]["decision"], "rejected");
  EXPECT_EQ(trace[0]["error"], "HUMUS_E_REJECTED");
  EXPECT_EQ(trace[0]["wire_sends"], 0);
  EXPECT_TRUE(trace[0]["status"].is_null());
  EXPECT_EQ(trace[0]["breaker"]["state"], "open");
  EXPECT_EQ(trace[0]["breaker"]["generation"], 2);
}

TEST(TraceCapiTest, BadArgumentsAreRefusedByName) {
  char* text = nullptr;
  EXPECT_EQ(humus_error_trace(nullptr, &text, nullptr), HUMUS_E_MISUSE);
  EXPECT_EQ(humus_response_trace(nullptr, &text, nullptr, nullptr), HUMUS_E_MISUSE);
  humus_error* made = nullptr;
  ASSERT_EQ(humus_error_new(HUMUS_E_CONFIG, "x", nullptr, &made), HUMUS_E_CONFIG);
  EXPECT_EQ(humus_error_trace(made, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  // An error no call made has an empty trace.
  ASSERT_EQ(humus_error_trace(made, &text, nullptr), HUMUS_OK);
  EXPECT_STREQ(text, "[]");
  humus_string_free(text);
  humus_error_free(made);
}

// Against the real server: what reached the wire. A dependency that refuses connections is attempted, and
// no request of it is on any wire (wire_sends 0); one that answers is on it once per attempt.
class TraceWireTest : public humus::test::WithTestServer {
 protected:
  void SetUp() override {
    WithTestServer::SetUp();
    ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt_, nullptr), HUMUS_OK);
  }
  void TearDown() override { humus_runtime_free(rt_); }
  humus_runtime* rt_ = nullptr;
};

TEST_F(TraceWireTest, EveryAttemptSaysWhetherItsRequestReachedTheWire) {
  server().script("/flaky", json::array({{{"status", 503}}, {{"status", 200}}}));
  const std::string base = "http://" + server().address("http");
  const std::string settings = R"({"base_url": ")" + base + R"(", "timeout": "30s", "backoff_base": "1ms",
                                  "backoff_max": "5ms"})";
  humus_client* c = humus::testing::new_capi_client(rt_, settings.c_str());
  ASSERT_NE(c, nullptr);
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", server().url("http", "/flaky").c_str(), &req, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(c, req, &resp, nullptr), HUMUS_OK);
  const json trace = trace_of(resp);
  humus_response_free(resp);
  humus_request_free(req);
  humus_client_free(c);
  ASSERT_EQ(trace.size(), 2u) << trace.dump(2);
  EXPECT_EQ(trace[0]["status"], 503);
  EXPECT_EQ(trace[0]["wire_sends"], 1);
  EXPECT_EQ(trace[0]["wait_source"], "backoff");
  EXPECT_EQ(trace[1]["status"], 200);
  EXPECT_EQ(trace[1]["wire_sends"], 1);
  EXPECT_EQ(server().requests("/flaky").size(), 2u);

  // A port nothing listens on: the connection is refused, every attempt made, none sent.
  const int closed = closed_port();
  const std::string refused = R"({"base_url": "http://127.0.0.1:)" + std::to_string(closed) +
                              R"(", "timeout": "30s", "max_attempts": 2, "backoff_base": "1ms", "backoff_max": "5ms"})";
  c = humus::testing::new_capi_client(rt_, refused.c_str());
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(humus_request_new("GET", ("http://127.0.0.1:" + std::to_string(closed) + "/").c_str(), &req, nullptr),
            HUMUS_OK);
  humus_error* err = nullptr;
  ASSERT_EQ(humus_client_do(c, req, &resp, &err), HUMUS_E_CONNECT);
  const json failed = trace_of(err);
  EXPECT_EQ(humus_error_attempts(err), 2);
  humus_error_free(err);
  humus_request_free(req);
  humus_client_free(c);
  ASSERT_EQ(failed.size(), 2u) << failed.dump(2);
  for (const json& r : failed) {
    EXPECT_EQ(r["error"], "HUMUS_E_CONNECT");
    EXPECT_EQ(r["wire_sends"], 0);
  }
  EXPECT_EQ(failed[0]["decision"], "again");
  EXPECT_EQ(failed[1]["decision"], "exhausted");
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
