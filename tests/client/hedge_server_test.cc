// Hedging (docs/retries.md §6.8) against the project's real local server: losers' transfers are cancelled on
// real sockets (HTTP/1.1: the connection closed; HTTP/2: the stream reset), and during an outage the hedges stop
// with the retry budget. Asserted on counts; held answers only make the hedge certain to go out (an answer held
// 100 ms cannot come before a hedge due at 20 ms), so a loaded machine cannot change an outcome.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "client/client.h"
#include "client/runtime.h"
#include "support/test_server.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

class HedgeServerTest : public humus::test::WithTestServer {
 protected:
  HedgeServerTest() : runtime_(options()) {}

  static RuntimeOptions options() {
    RuntimeOptions o;
    o.resolve.emplace_back(server().host_port("https"), server().address("https"));
    return o;
  }

  std::unique_ptr<Client> make(const std::string& listener, settings::Settings s) {
    const bool tls = listener != "http";
    s.base_url = tls ? "https://" + server().host_port(listener) : "http://" + server().address(listener);
    if (tls) {
      s.tls.emplace();
      s.tls->ca_file = server().ca_file();
      s.http_version = settings::HttpVersion::kHttp2;
    }
    s.hedge.emplace();
    s.hedge->delay = "20ms";
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Request get(const std::string& listener, const std::string& path) {
    Request r;
    r.method = "GET";
    r.url = server().url(listener, path);
    return r;
  }

  // Waits (at most 20 s: whatever a loaded machine takes) until the server's `what` count is at most `n`.
  static bool stat_drops_to(const char* what, int64_t n) {
    const auto until = std::chrono::steady_clock::now() + seconds(20);
    while (server().stats()[what].get<int64_t>() > n && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    return server().stats()[what].get<int64_t>() <= n;
  }

  Runtime runtime_;
};

// F180: HTTP/1.1: the loser hangs on its own connection; once the hedge won, the client closes that connection.
TEST_F(HedgeServerTest, TheLosersConnectionIsClosedOverHttp1) {
  server().script("/h1", json::array({{{"hang", true}}, {{"status", 200}, {"body", "fast"}}}), false);
  auto c = make("http", {});
  ASSERT_NE(c, nullptr);
  const int64_t before = server().stats()["connections"].get<int64_t>();
  CallResult out = c->execute(get("http", "/h1"));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->body, "fast");
  EXPECT_EQ(out.attempts, 2);
  EXPECT_EQ(server().requests("/h1").size(), 2u);
  // The winner's connection may stay in the idle pool; the loser's is gone.
  EXPECT_TRUE(stat_drops_to("connections", before + 1)) << server().stats().dump();
  const breaker::Counts counts = c->breaker().counts();
  EXPECT_EQ(counts.successes, 1u);
  EXPECT_EQ(counts.failures, 0u);  // the cancelled loser is ignored
}

// F181: HTTP/2: both copies are streams of one connection; the loser's stream is reset, its server task ends.
TEST_F(HedgeServerTest, TheLosersStreamIsResetOverHttp2) {
  server().script("/h2", json::array({{{"hang", true}}, {{"status", 200}, {"body", "fast"}}}), false);
  auto c = make("https", {});
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->execute(get("https", "/warm")).ok());  // the connection exists before the baseline
  const int64_t tasks = server().stats()["tasks"].get<int64_t>();
  CallResult out = c->execute(get("https", "/h2"));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->body, "fast");
  EXPECT_EQ(out.response->http_version, "2");
  EXPECT_EQ(out.attempts, 2);
  EXPECT_EQ(server().requests("/h2").size(), 2u);
  EXPECT_TRUE(stat_drops_to("tasks", tasks)) << server().stats().dump();
}

// F182: an outage: every answer a 503 held 100 ms. max_attempts 2 leaves room for the hedge and nothing else. tokens 10:
// a hedged call costs 3 (the hedge, then both 503s), so two calls are hedged (10 -> 7 -> 4) and every later one
// is not (4 is not more than half), each 503 taking what is left. The breaker is kept closed to isolate the budget.
TEST_F(HedgeServerTest, DuringAnOutageTheHedgesStopWithTheBudget) {
  server().script("/down", json::array({{{"status", 503}, {"delay_ms", 100}}}));
  settings::Settings s;
  s.max_attempts = 2;
  s.breaker.window = 1000;
  s.policy_params.consecutive_failures = 1000;
  s.policy_params.min_results = 1000;
  auto c = make("http", s);
  ASSERT_NE(c, nullptr);
  int hedged = 0;
  int sent = 0;
  for (int i = 0; i < 10; ++i) {
    CallResult out = c->execute(get("http", "/down"));
    ASSERT_TRUE(out.ok()) << out.error.message();
    EXPECT_EQ(out.response->status, 503);
    sent += out.attempts;
    if (out.attempts == 2) ++hedged;
    EXPECT_EQ(out.attempts, i < 2 ? 2 : 1) << "call " << i;
  }
  EXPECT_EQ(hedged, 2);
  EXPECT_EQ(sent, 12);
  EXPECT_EQ(server().requests("/down").size(), 12u);
  EXPECT_EQ(c->budget().tokens(), 0);
  EXPECT_EQ(c->breaker().counts().failures, 12u);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
