// The slow-call trip (docs/breaker.md §9.3a) against the project's real local server: answers held back by the
// server make attempts slow on real sockets. Only lower bounds of time are relied on (an answer held 300 ms
// cannot take less), so a loaded machine cannot change the outcome.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "client/body_stream.h"
#include "client/client.h"
#include "client/runtime.h"
#include "support/test_server.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using nlohmann::json;
using std::chrono::milliseconds;

class SlowCallServerTest : public humus::test::WithTestServer {
 protected:
  std::unique_ptr<Client> make(settings::Settings s) {
    s.base_url = "http://" + server().address("http");
    s.max_attempts = 1;
    s.breaker.window = 4;
    s.policy_params.min_results = 4;
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Request get(const std::string& path) {
    Request r;
    r.method = "GET";
    r.url = server().url("http", path);
    return r;
  }

  Runtime runtime_{RuntimeOptions{}};
};

TEST_F(SlowCallServerTest, SlowAnswersOpenTheCircuitWhenTheRuleIsOn) {
  server().script("/held", json::array({{{"status", 200}, {"delay_ms", 300}}}));
  settings::Settings s;
  s.breaker.slow_call_duration = milliseconds(100);
  s.policy_params.slow_call_rate = 1.0;
  auto c = make(s);
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 4; ++i) {
    CallResult out = c->execute(get("/held"));
    ASSERT_TRUE(out.ok()) << out.error.message();
    EXPECT_EQ(out.response->status, 200);
  }
  EXPECT_EQ(c->breaker().state(), breaker::State::kOpen);
  CallResult rejected = c->execute(get("/held"));
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error.code(), Code::kRejected);
  EXPECT_EQ(server().requests("/held").size(), 4u);
}

TEST_F(SlowCallServerTest, OffByDefaultTheSameAnswersChangeNothing) {
  server().script("/held", json::array({{{"status", 200}, {"delay_ms", 300}}}));
  auto c = make(settings::Settings{});
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(c->execute(get("/held")).ok());
  EXPECT_EQ(c->breaker().state(), breaker::State::kClosed);
  const breaker::Counts counts = c->breaker().counts();
  EXPECT_EQ(counts.successes, 5u);
  EXPECT_EQ(counts.slow_results, 0u);
  EXPECT_EQ(counts.window_slow, 0u);
}

TEST_F(SlowCallServerTest, ASlowBodyMakesAStreamedAttemptSlow) {
  // The headers come at once; the body 300 ms later: the attempt lasts until its body ends.
  server().script("/late-body", json::array({{{"status", 200}, {"body", "late"}, {"body_delay_ms", 300}}}));
  settings::Settings s;
  s.breaker.slow_call_duration = milliseconds(100);
  auto c = make(s);
  ASSERT_NE(c, nullptr);
  CallResult opened = c->open(get("/late-body"));
  ASSERT_TRUE(opened.ok()) << opened.error.message();
  ASSERT_NE(opened.response->stream, nullptr);
  std::string body;
  ASSERT_TRUE(opened.response->stream->read_rest(body, 1024).ok());
  EXPECT_EQ(body, "late");
  EXPECT_EQ(c->breaker().counts().slow_results, 1u);
  EXPECT_EQ(c->breaker().state(), breaker::State::kClosed);  // slow_call_rate is null: slowness opens nothing
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
