// Attempt hooks (docs/retries.md §6.7) through the C ABI alone, against the real loopback test server:
// `before` sees and changes every attempt's request, `after` sees every attempt's result, a failing `before`
// sends nothing and leaves the breaker alone, and the table's destroy runs once. The mock transport runs them
// too.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "humus_http.h"
#include "support/capi_client.h"
#include "support/test_server.h"

namespace {
namespace HUMUS_UNITY_ID {

// What the hooks saw, from whichever thread drove the attempts.
struct Seen {
  std::mutex mu;
  std::vector<std::string> methods, urls;
  std::vector<int32_t> before_numbers, after_numbers, statuses;
  std::vector<size_t> header_counts;  // of each response `after` saw
  std::vector<std::thread::id> threads;
  std::vector<std::string> headers;   // "name: value" of every header `before` was shown, first attempt
  humus_status fail_with = HUMUS_OK;  // what `before` returns
  std::string set_name;               // a header `before` sets, valued "<set_value>-<attempt>"
  std::string set_value;
  humus_status set_status = HUMUS_OK;  // what that set_header returned, last attempt
  std::string set_message;
  std::string set_field;
  std::atomic<int> destroyed{0};
};

humus_status record_before(void* user, humus_attempt_request* r) {
  auto* seen = static_cast<Seen*>(user);
  std::lock_guard<std::mutex> lock(seen->mu);
  seen->methods.emplace_back(humus_attempt_request_method(r));
  seen->urls.emplace_back(humus_attempt_request_url(r));
  seen->before_numbers.push_back(humus_attempt_request_number(r));
  seen->threads.push_back(std::this_thread::get_id());
  if (seen->headers.empty()) {
    for (size_t i = 0; i < humus_attempt_request_header_count(r); ++i) {
      seen->headers.push_back(std::string(humus_attempt_request_header_name(r, i)) + ": " +
                              humus_attempt_request_header_value(r, i));
    }
    EXPECT_EQ(humus_attempt_request_header_name(r, humus_attempt_request_header_count(r)), nullptr);
  }
  if (!seen->set_name.empty()) {
    const std::string value = seen->set_value + "-" + std::to_string(humus_attempt_request_number(r));
    humus_error* err = nullptr;
    seen->set_status = humus_attempt_request_set_header(r, seen->set_name.c_str(), value.c_str(), &err);
    seen->set_message = humus_error_message(err);
    seen->set_field = humus_error_field(err, 0) != nullptr ? humus_error_field(err, 0) : "";
    humus_error_free(err);
  }
  return seen->fail_with;
}

void record_after(void* user, const humus_attempt* a) {
  auto* seen = static_cast<Seen*>(user);
  std::lock_guard<std::mutex> lock(seen->mu);
  seen->after_numbers.push_back(humus_attempt_number(a));
  seen->statuses.push_back(humus_attempt_status(a));
  const size_t n = humus_attempt_header_count(a);
  seen->header_counts.push_back(n);
  EXPECT_EQ(humus_attempt_header_name(a, n), nullptr);
  for (size_t i = 0; i < n; ++i) {
    const char* value = humus_attempt_header(a, humus_attempt_header_name(a, i));
    EXPECT_NE(value, nullptr);
    EXPECT_NE(humus_attempt_header_value(a, i), nullptr);
  }
}

void count_destroy(void* user) { ++static_cast<Seen*>(user)->destroyed; }

humus_attempt_hooks hooks_of(Seen& seen) {
  humus_attempt_hooks hooks = HUMUS_ATTEMPT_HOOKS_INIT;
  hooks.user_data = &seen;
  hooks.before = record_before;
  hooks.after = record_after;
  hooks.destroy = count_destroy;
  return hooks;
}

using Outcome = humus::testing::CallOutcome;
constexpr auto on_done = &humus::testing::CallOutcome::on_done;

class AttemptHooksTest : public humus::test::WithTestServer {
 protected:
  void SetUp() override {
    WithTestServer::SetUp();
    ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt_, nullptr), HUMUS_OK);
    const std::string json = R"({"base_url": "http://)" + server().address("http") +
                             R"(", "timeout": "30s", "backoff_base": "1ms", "backoff_max": "5ms"})";
    ASSERT_EQ(humus_settings_from_json(json.data(), json.size(), &settings_, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    humus_client_free(client_);
    humus_settings_free(settings_);
    humus_runtime_free(rt_);
    EXPECT_EQ(seen_.destroyed.load(), hooks_set_ ? 1 : 0);
  }
  void set_hooks() {
    const humus_attempt_hooks hooks = hooks_of(seen_);
    ASSERT_EQ(humus_settings_set_attempt_hooks(settings_, &hooks, nullptr), HUMUS_OK);
    hooks_set_ = true;
  }
  void make_client() { ASSERT_EQ(humus_client_new(rt_, settings_, &client_, nullptr), HUMUS_OK); }
  humus_request* request(const char* method, const std::string& path) {
    humus_request* r = nullptr;
    EXPECT_EQ(humus_request_new(method, server().url("http", path).c_str(), &r, nullptr), HUMUS_OK);
    return r;
  }
  humus_breaker_counts counts() {
    humus_breaker_counts c = HUMUS_BREAKER_COUNTS_INIT;
    EXPECT_EQ(humus_client_breaker_counts(client_, &c), HUMUS_OK);
    return c;
  }
  void script_two_503s(const std::string& path) {
    server().script(path, nlohmann::json::array({{{"status", 503}}, {{"status", 503}}, {{"status", 200}}}));
  }

  Seen seen_;
  bool hooks_set_ = false;
  humus_runtime* rt_ = nullptr;
  humus_settings* settings_ = nullptr;
  humus_client* client_ = nullptr;
};

TEST_F(AttemptHooksTest, BeforeAndAfterRunForEveryAttempt) {
  set_hooks();
  make_client();
  script_two_503s("/flaky");
  humus_request* req = request("GET", "/flaky?x=1");
  ASSERT_EQ(humus_request_set_header(req, "X-Caller", "test", nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 200);
  EXPECT_EQ(humus_response_attempts(resp), 3);
  humus_response_free(resp);
  humus_request_free(req);

  const std::string url = server().url("http", "/flaky?x=1");
  EXPECT_EQ(seen_.before_numbers, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(seen_.methods, (std::vector<std::string>{"GET", "GET", "GET"}));
  EXPECT_EQ(seen_.urls, (std::vector<std::string>{url, url, url}));
  EXPECT_EQ(seen_.after_numbers, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(seen_.statuses, (std::vector<int32_t>{503, 503, 200}));
  for (const size_t n : seen_.header_counts) EXPECT_GT(n, 0u);  // the server's Content-Length at least
  EXPECT_NE(std::find(seen_.headers.begin(), seen_.headers.end(), "X-Caller: test"), seen_.headers.end());
  for (const std::thread::id t : seen_.threads) EXPECT_EQ(t, std::this_thread::get_id());  // the caller's
}

TEST_F(AttemptHooksTest, AHeaderSetByBeforeGoesOnTheWireForThatAttemptOnly) {
  seen_.set_name = "X-Signature";
  seen_.set_value = "sig";
  set_hooks();
  make_client();
  script_two_503s("/signed");
  humus_request* req = request("GET", "/signed");
  ASSERT_EQ(humus_request_set_header(req, "X-Signature", "from-the-caller", nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 200);
  humus_response_free(resp);
  humus_request_free(req);
  EXPECT_EQ(seen_.set_status, HUMUS_OK);

  const std::vector<nlohmann::json> records = server().requests("/signed");
  ASSERT_EQ(records.size(), 3u);
  for (size_t i = 0; i < records.size(); ++i) {
    std::vector<std::string> values;
    for (const auto& h : records[i]["headers"]) {
      if (h[0] == "x-signature") values.push_back(h[1].get<std::string>());
    }
    // Replaced, not added: one value, this attempt's.
    EXPECT_EQ(values, std::vector<std::string>{"sig-" + std::to_string(i + 1)}) << "attempt " << i + 1;
  }
}

TEST_F(AttemptHooksTest, AFailingBeforeSendsNothingAndLeavesTheBreakerAlone) {
  seen_.fail_with = HUMUS_E_INVALID_ARGUMENT;
  set_hooks();
  make_client();
  server().script("/never", nlohmann::json::array({{{"status", 200}}}));
  const humus_breaker_counts before = counts();
  humus_request* req = request("POST", "/never");
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_client_do(client_, req, &resp, &err), HUMUS_E_CALLBACK);
  EXPECT_EQ(resp, nullptr);
  EXPECT_EQ(humus_error_status(err), HUMUS_E_CALLBACK);
  const std::string message = humus_error_message(err);
  EXPECT_NE(message.find("before"), std::string::npos) << message;
  EXPECT_NE(message.find("HUMUS_E_INVALID_ARGUMENT"), std::string::npos) << message;
  EXPECT_EQ(humus_error_attempts(err), 0);
  humus_error_free(err);
  humus_request_free(req);

  EXPECT_EQ(server().requests("/never").size(), 0u);
  EXPECT_EQ(seen_.before_numbers, std::vector<int32_t>{1});  // no retry followed
  EXPECT_TRUE(seen_.after_numbers.empty());
  const humus_breaker_counts after = counts();
  EXPECT_EQ(after.state, HUMUS_CIRCUIT_CLOSED);
  EXPECT_EQ(after.successes, before.successes);
  EXPECT_EQ(after.failures, before.failures);
  EXPECT_EQ(after.window_results, before.window_results);
  double tokens = 0;
  ASSERT_EQ(humus_client_budget_tokens(client_, &tokens), HUMUS_OK);
  EXPECT_EQ(tokens, 10.0);  // untouched
}

TEST_F(AttemptHooksTest, AHeaderTheClientOwnsIsRefusedNamingIt) {
  for (const char* name : {"Content-Length", "Transfer-Encoding", "host", "X-Bad\r\nName"}) {
    SCOPED_TRACE(name);
    seen_.set_name = name;
    seen_.set_value = "5";
    if (!hooks_set_) {
      set_hooks();
      make_client();
    }
    humus_request* req = request("GET", "/plain");
    humus_response* resp = nullptr;
    ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);  // the hook went on without it
    humus_response_free(resp);
    humus_request_free(req);
    EXPECT_EQ(seen_.set_status, HUMUS_E_INVALID_ARGUMENT);
    EXPECT_EQ(seen_.set_field, name);
    EXPECT_EQ(seen_.set_message.find("5"), std::string::npos)
        << "the value is never shown: " << seen_.set_message;
  }
  for (const auto& record : server().requests("/plain")) {
    for (const auto& h : record["headers"]) EXPECT_NE(h[0], "transfer-encoding");
  }
}

TEST_F(AttemptHooksTest, SubmittedCallsRunTheHooksOnTheLoopThread) {
  set_hooks();
  make_client();
  script_two_503s("/async");
  humus_request* req = request("GET", "/async");
  Outcome outcome;
  humus_call* call = nullptr;
  ASSERT_EQ(humus_client_submit(client_, req, on_done, &outcome, &call, nullptr), HUMUS_OK);
  ASSERT_TRUE(outcome.wait());
  EXPECT_EQ(outcome.status, HUMUS_OK);
  EXPECT_EQ(outcome.http_status, 200);
  humus_call_free(call);
  humus_request_free(req);
  std::lock_guard<std::mutex> lock(seen_.mu);
  EXPECT_EQ(seen_.before_numbers, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(seen_.statuses, (std::vector<int32_t>{503, 503, 200}));
  ASSERT_EQ(seen_.threads.size(), 3u);
  EXPECT_NE(seen_.threads[0], std::this_thread::get_id());
  EXPECT_EQ(seen_.threads[1], seen_.threads[0]);
}

TEST_F(AttemptHooksTest, AFailingBeforeEndsASubmittedCallTheSameWay) {
  seen_.fail_with = HUMUS_E_CALLBACK;
  set_hooks();
  make_client();
  humus_request* req = request("GET", "/never-async");
  Outcome outcome;
  humus_call* call = nullptr;
  ASSERT_EQ(humus_client_submit(client_, req, on_done, &outcome, &call, nullptr), HUMUS_OK);
  ASSERT_TRUE(outcome.wait());
  EXPECT_EQ(outcome.status, HUMUS_E_CALLBACK);
  humus_call_free(call);
  humus_request_free(req);
  EXPECT_EQ(server().requests("/never-async").size(), 0u);
  std::lock_guard<std::mutex> lock(seen_.mu);
  EXPECT_EQ(seen_.before_numbers, std::vector<int32_t>{1});
  EXPECT_TRUE(seen_.after_numbers.empty());
}

TEST_F(AttemptHooksTest, EveryRedirectHopHasItsOwnFirstAttempt) {
  set_hooks();
  make_client();
  const std::string target = server().url("http", "/landed");
  server().script("/moved", nlohmann::json::array({{{"status", 302}, {"headers", {{"Location", target}}}}}));
  humus_request* req = request("GET", "/moved");
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 200);
  humus_response_free(resp);
  humus_request_free(req);
  EXPECT_EQ(seen_.urls, (std::vector<std::string>{server().url("http", "/moved"), target}));
  EXPECT_EQ(seen_.before_numbers, (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(seen_.statuses, (std::vector<int32_t>{302, 200}));
}

TEST_F(AttemptHooksTest, DestroyRunsOnceWhenTheLastHolderGoes) {
  set_hooks();
  humus_settings* copy = nullptr;
  ASSERT_EQ(humus_settings_clone(settings_, &copy, nullptr), HUMUS_OK);
  humus_settings_free(settings_);
  settings_ = nullptr;
  ASSERT_EQ(humus_client_new(rt_, copy, &client_, nullptr), HUMUS_OK);
  humus_settings_free(copy);
  EXPECT_EQ(seen_.destroyed.load(), 0);
  humus_request* req = request("GET", "/once");
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);  // the clone's client has the hooks
  humus_response_free(resp);
  humus_request_free(req);
  EXPECT_EQ(seen_.before_numbers, std::vector<int32_t>{1});
  humus_client_free(client_);
  client_ = nullptr;
  EXPECT_EQ(seen_.destroyed.load(), 1);
}

TEST_F(AttemptHooksTest, RequestHooksRunAfterTheSettingsHooksAndAreDestroyedWithTheRequest) {
  set_hooks();
  make_client();
  Seen own;
  own.set_name = "X-Own";
  own.set_value = "v";
  humus_request* req = request("GET", "/own");
  const humus_attempt_hooks hooks = hooks_of(own);
  ASSERT_EQ(humus_request_set_attempt_hooks(req, &hooks, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  humus_response_free(resp);
  EXPECT_EQ(seen_.before_numbers, std::vector<int32_t>{1});
  EXPECT_EQ(own.before_numbers, std::vector<int32_t>{1});
  EXPECT_EQ(own.statuses, std::vector<int32_t>{200});
  // The settings' hooks came first: the request's saw no X-Own yet, and set it.
  EXPECT_EQ(std::find(own.headers.begin(), own.headers.end(), "X-Own: v-1"), own.headers.end());
  const std::vector<nlohmann::json> records = server().requests("/own");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_NE(records[0]["headers"].dump().find(R"(["x-own","v-1"])"), std::string::npos) << records[0].dump();
  EXPECT_EQ(own.destroyed.load(), 0);
  humus_request_free(req);
  EXPECT_EQ(own.destroyed.load(), 1);
}

TEST(AttemptHooksTable, RefusedTablesAreNotDestroyed) {
  const char* json = R"({"base_url": "http://payments:8080"})";
  humus_settings* s = nullptr;
  ASSERT_EQ(humus_settings_from_json(json, std::strlen(json), &s, nullptr), HUMUS_OK);
  Seen seen;
  humus_attempt_hooks hooks = hooks_of(seen);
  hooks.before = nullptr;
  hooks.after = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_settings_set_attempt_hooks(s, &hooks, &err), HUMUS_E_PROGRAM);
  EXPECT_STREQ(humus_error_field(err, 0), "before");
  humus_error_free(err);
  EXPECT_EQ(humus_settings_set_attempt_hooks(s, nullptr, nullptr), HUMUS_E_PROGRAM);
  hooks.after = record_after;  // `before` may be NULL
  ASSERT_EQ(humus_settings_set_attempt_hooks(s, &hooks, nullptr), HUMUS_OK);
  EXPECT_EQ(seen.destroyed.load(), 0);
  ASSERT_EQ(humus_settings_set_attempt_hooks(s, &hooks, nullptr), HUMUS_OK);  // replaces: the first destroyed
  EXPECT_EQ(seen.destroyed.load(), 1);
  humus_settings_free(s);
  EXPECT_EQ(seen.destroyed.load(), 2);
}

// The mock transport is driven by the same call loop: the hooks run, and what `before` sets reaches it.
humus_status answer_with_header(void* user, const humus_mock_request* req, humus_mock_reply* reply) {
  const char* sig = humus_mock_request_header(req, "X-Signature");
  static_cast<std::vector<std::string>*>(user)->push_back(sig != nullptr ? sig : "");
  humus_mock_reply_set_status(reply, static_cast<std::vector<std::string>*>(user)->size() < 2 ? 503 : 200);
  return HUMUS_OK;
}

TEST(AttemptHooksMock, TheMockTransportSeesWhatBeforeSet) {
  const char* options = R"({"clock": "virtual", "seed": 1})";
  humus_runtime* rt = nullptr;
  ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt, nullptr), HUMUS_OK);
  std::vector<std::string> received;
  humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
  mock.respond = answer_with_header;
  mock.user_data = &received;
  ASSERT_EQ(humus_runtime_set_mock_transport(rt, &mock, nullptr), HUMUS_OK);
  const char* json = R"({"base_url": "http://payments:8080"})";
  humus_settings* s = nullptr;
  ASSERT_EQ(humus_settings_from_json(json, std::strlen(json), &s, nullptr), HUMUS_OK);
  Seen seen;
  seen.set_name = "X-Signature";
  seen.set_value = "mock";
  const humus_attempt_hooks hooks = hooks_of(seen);
  ASSERT_EQ(humus_settings_set_attempt_hooks(s, &hooks, nullptr), HUMUS_OK);
  humus_client* c = nullptr;
  ASSERT_EQ(humus_client_new(rt, s, &c, nullptr), HUMUS_OK);
  humus_settings_free(s);
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://payments:8080/pay", &req, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(c, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 200);
  humus_response_free(resp);
  humus_request_free(req);
  EXPECT_EQ(received, (std::vector<std::string>{"mock-1", "mock-2"}));
  EXPECT_EQ(seen.statuses, (std::vector<int32_t>{503, 200}));
  humus_client_free(c);
  humus_runtime_free(rt);
  EXPECT_EQ(seen.destroyed.load(), 1);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
