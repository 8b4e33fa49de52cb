// humus_client_submit honours the request's cancel token (humus_request_set_cancel), through the C ABI alone:
// triggering it ends a submitted call as humus_call_cancel does, and a token already triggered sends nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "humus_http.h"
#include "support/capi_client.h"

namespace {
namespace HUMUS_UNITY_ID {

std::atomic<int> g_sent{0};

// Every attempt hangs: only a cancel (or the 30 s timeout, which the test never reaches) ends it.
humus_status hang(void*, const humus_mock_request*, humus_mock_reply* reply) {
  ++g_sent;
  humus_mock_reply_set_hang(reply);
  return HUMUS_OK;
}

using Outcome = humus::testing::CallOutcome;
constexpr auto on_done = &humus::testing::CallOutcome::on_done;

class SubmitCancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_sent = 0;
    ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt_, nullptr), HUMUS_OK);  // a real clock: hangs stay hung
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = hang;
    ASSERT_EQ(humus_runtime_set_mock_transport(rt_, &mock, nullptr), HUMUS_OK);
    client_ = humus::testing::new_capi_client(rt_, R"({"base_url": "http://payments:8080", "timeout": "30s", "attempt_timeout": "20s"})");
    ASSERT_NE(client_, nullptr);
    ASSERT_EQ(humus_request_new("GET", "http://payments:8080/slow", &req_, nullptr), HUMUS_OK);
    ASSERT_EQ(humus_cancel_new(&token_), HUMUS_OK);
  }
  void TearDown() override {
    humus_cancel_free(token_);
    humus_request_free(req_);
    humus_client_free(client_);
    humus_runtime_free(rt_);
  }

  // Waits until `n` attempts reached the mock, so a cancel then cuts a call that is really in flight.
  static void await_sent(int n) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (g_sent.load() < n && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(g_sent.load(), n);
  }

  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
  humus_request* req_ = nullptr;
  humus_cancel* token_ = nullptr;
};

TEST_F(SubmitCancelTest, TheRequestTokenCancelsASubmittedCallAsTheHandleDoes) {
  // By the handle: the reference outcome.
  Outcome by_handle;
  humus_call* call = nullptr;
  ASSERT_EQ(humus_client_submit(client_, req_, on_done, &by_handle, &call, nullptr), HUMUS_OK);
  await_sent(1);
  humus_call_cancel(call);
  ASSERT_TRUE(by_handle.wait());
  humus_call_free(call);

  // By the token, with no handle kept at all.
  ASSERT_EQ(humus_request_set_cancel(req_, token_), HUMUS_OK);
  Outcome by_token;
  ASSERT_EQ(humus_client_submit(client_, req_, on_done, &by_token, nullptr, nullptr), HUMUS_OK);
  await_sent(2);
  humus_cancel_trigger(token_);
  ASSERT_TRUE(by_token.wait()) << "the token did not reach the submitted call";

  EXPECT_EQ(by_token.status, HUMUS_E_CANCELLED);
  EXPECT_EQ(by_token.status, by_handle.status);
  EXPECT_EQ(by_token.attempts, by_handle.attempts);
  EXPECT_EQ(by_token.attempts, 1);
}

TEST_F(SubmitCancelTest, OneTokenCancelsEverySubmittedCall) {
  ASSERT_EQ(humus_request_set_cancel(req_, token_), HUMUS_OK);
  Outcome calls[3];
  for (Outcome& o : calls) ASSERT_EQ(humus_client_submit(client_, req_, on_done, &o, nullptr, nullptr), HUMUS_OK);
  await_sent(3);
  humus_cancel_trigger(token_);
  for (Outcome& o : calls) {
    ASSERT_TRUE(o.wait());
    EXPECT_EQ(o.status, HUMUS_E_CANCELLED);
  }
}

TEST_F(SubmitCancelTest, ATokenTriggeredBeforeSubmitSendsNothing) {
  ASSERT_EQ(humus_request_set_cancel(req_, token_), HUMUS_OK);
  humus_cancel_trigger(token_);
  Outcome o;
  ASSERT_EQ(humus_client_submit(client_, req_, on_done, &o, nullptr, nullptr), HUMUS_OK);
  ASSERT_TRUE(o.wait());
  EXPECT_EQ(o.status, HUMUS_E_CANCELLED);
  EXPECT_EQ(o.attempts, 0);
  EXPECT_EQ(g_sent.load(), 0);
}

TEST_F(SubmitCancelTest, TheCallerMayFreeTheTokenWhileACallHoldsIt) {
  humus_cancel* second = nullptr;
  ASSERT_EQ(humus_cancel_new(&second), HUMUS_OK);
  ASSERT_EQ(humus_request_set_cancel(req_, second), HUMUS_OK);
  Outcome o;
  humus_call* call = nullptr;
  ASSERT_EQ(humus_client_submit(client_, req_, on_done, &o, &call, nullptr), HUMUS_OK);
  humus_cancel_free(second);  // the request and the call still hold the token
  humus_request_free(req_);
  req_ = nullptr;
  await_sent(1);
  humus_call_cancel(call);
  ASSERT_TRUE(o.wait());
  EXPECT_EQ(o.status, HUMUS_E_CANCELLED);
  humus_call_free(call);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
