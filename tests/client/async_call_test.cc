// Asynchronous calls (docs/bindings.md §17.1): the same rules as blocking ones, driven by the runtime's event loop —
// on the virtual clock with the mock transport, and against the real local server.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "client/client.h"
#include "support/test_server.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::MockReply;

// Collects outcomes from the loop thread.
class Outcomes {
 public:
  CallDone sink() {
    return [this](CallResult r) {
      std::lock_guard<std::mutex> lock(mu_);
      results_.push_back(std::move(r));
      cv_.notify_all();
    };
  }
  std::vector<CallResult> wait(size_t n, std::chrono::milliseconds bound = seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, bound, [&] { return results_.size() >= n; })) << "only " << results_.size();
    return results_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CallResult> results_;
};

Request get(const std::string& url) {
  Request r;
  r.url = url;
  return r;
}

class AsyncMockTest : public ::testing::Test {
 protected:
  AsyncMockTest() : runtime_([] {
    RuntimeOptions o;
    o.virtual_clock = true;
    o.seed = 3;
    return o;
  }()) {}

  std::unique_ptr<Client> make(testing::MockHandler handler, settings::Settings s = {}) {
    runtime_.set_mock_handler(std::move(handler));
    s.base_url = "http://payments:8080";
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }

  Runtime runtime_;
};

TEST_F(AsyncMockTest, RetryThroughA503WaitsItsRetryAfterOnVirtualTime) {
  std::atomic<int> n{0};
  settings::Settings s;
  s.max_retry_after = seconds(5);
  auto c = make(
      [&](const transport::WireRequest&) -> Result<MockReply> {
        MockReply r;
        r.status = n++ == 0 ? 503 : 200;
        if (r.status == 503) r.headers.add("Retry-After", "3");
        return r;
      },
      s);
  Outcomes out;
  const Instant t0 = runtime_.clock().now();
  c->submit(get("http://payments:8080/x"), out.sink());
  std::vector<CallResult> r = out.wait(1);
  ASSERT_TRUE(r[0].ok()) << r[0].error.message();
  EXPECT_EQ(r[0].response->status, 200);
  EXPECT_EQ(r[0].attempts, 2);
  EXPECT_EQ(runtime_.clock().now() - t0, seconds(3));
}

TEST_F(AsyncMockTest, HangingDependencyEndsAtTheDeadlineAfterTwoAttempts) {
  auto c = make([](const transport::WireRequest&) -> Result<MockReply> {
    MockReply r;
    r.hang = true;
    return r;
  });
  Outcomes out;
  const Instant t0 = runtime_.clock().now();
  c->submit(get("http://payments:8080/x"), out.sink());
  std::vector<CallResult> r = out.wait(1);
  ASSERT_FALSE(r[0].ok());
  EXPECT_EQ(r[0].error.code(), Code::kTimeout);
  EXPECT_EQ(r[0].attempts, 2);
  EXPECT_EQ(runtime_.clock().now() - t0, seconds(10));
}

TEST_F(AsyncMockTest, BulkheadQueuesBrieflyThenTurnsAway) {
  settings::Settings s;
  s.bulkhead.max_concurrent = 2;
  s.bulkhead.wait = milliseconds(500);
  auto c = make(
      [](const transport::WireRequest& req) -> Result<MockReply> {
        MockReply r;
        r.delay = req.url.ends_with("/slow") ? seconds(2) : milliseconds(100);
        return r;
      },
      s);
  Outcomes out;
  // Two slow calls hold both slots for 2 s; a third waits 500 ms and is turned away. Virtual time stands
  // still until all three are submitted: otherwise the first could finish before the third arrives.
  {
    testing::VirtualClock::Hold still(*runtime_.virtual_clock());
    c->submit(get("http://payments:8080/slow"), out.sink());
    c->submit(get("http://payments:8080/slow"), out.sink());
    c->submit(get("http://payments:8080/fast"), out.sink());
  }
  std::vector<CallResult> r = out.wait(3);
  int full = 0;
  int ok = 0;
  for (const CallResult& one : r) {
    if (one.ok()) ++ok;
    if (!one.ok() && one.error.code() == Code::kBulkheadFull) ++full;
  }
  EXPECT_EQ(ok, 2);
  EXPECT_EQ(full, 1);
  EXPECT_EQ(c->bulkhead().in_flight(), 0u);
}

TEST_F(AsyncMockTest, ACallWaitingBrieflyGetsTheFreedSlot) {
  settings::Settings s;
  s.bulkhead.max_concurrent = 1;
  s.bulkhead.wait = milliseconds(500);
  auto c = make(
      [](const transport::WireRequest&) -> Result<MockReply> {
        MockReply r;
        r.delay = milliseconds(200);
        return r;
      },
      s);
  Outcomes out;
  {
    testing::VirtualClock::Hold still(*runtime_.virtual_clock());  // both submitted at one instant
    c->submit(get("http://payments:8080/a"), out.sink());
    c->submit(get("http://payments:8080/b"), out.sink());
  }
  std::vector<CallResult> r = out.wait(2);
  EXPECT_TRUE(r[0].ok());
  EXPECT_TRUE(r[1].ok());
}

TEST_F(AsyncMockTest, CancelDuringTheWaitReturnsTheBufferedResponse) {
  runtime_.virtual_clock()->set_auto_advance(false);
  settings::Settings s;
  s.max_retry_after = seconds(5);
  auto c = make(
      [](const transport::WireRequest&) -> Result<MockReply> {
        MockReply r;
        r.status = 503;
        r.headers.add("Retry-After", "4");
        r.body = "later";
        return r;
      },
      s);
  Outcomes out;
  std::shared_ptr<AsyncCall> call = c->submit(get("http://payments:8080/x"), out.sink());
  ASSERT_TRUE(runtime_.virtual_clock()->wait_for_sleepers(1));  // the loop sleeps on the retry's timer
  call->cancel();
  std::vector<CallResult> r = out.wait(1);
  ASSERT_TRUE(r[0].ok());
  EXPECT_EQ(r[0].response->status, 503);
  EXPECT_EQ(r[0].response->body, "later");
}

// F112
TEST_F(AsyncMockTest, FreeingTheClientCancelsItsCallsAndWaitsForEveryCompletion) {
  runtime_.virtual_clock()->set_auto_advance(false);
  auto c = make([](const transport::WireRequest&) -> Result<MockReply> {
    MockReply r;
    r.hang = true;
    return r;
  });
  Outcomes out;
  for (int i = 0; i < 5; ++i) c->submit(get("http://payments:8080/x"), out.sink());
  ASSERT_TRUE(runtime_.virtual_clock()->wait_for_sleepers(1));
  c.reset();  // returns only after every done ran
  std::vector<CallResult> r = out.wait(5, milliseconds(1));
  ASSERT_EQ(r.size(), 5u);
  for (const CallResult& one : r) {
    ASSERT_FALSE(one.ok());
    EXPECT_EQ(one.error.code(), Code::kCancelled);
  }
}

TEST_F(AsyncMockTest, BlockingCallFromACallbackIsRefused) {
  auto c = make([](const transport::WireRequest&) -> Result<MockReply> { return MockReply{}; });
  std::promise<Code> inner;
  c->submit(get("http://payments:8080/x"), [&](CallResult) {
    inner.set_value(c->execute(get("http://payments:8080/y")).error.code());
  });
  EXPECT_EQ(inner.get_future().get(), Code::kMisuse);
}

TEST_F(AsyncMockTest, CountsAreExactUnderManyConcurrentCalls) {
  std::atomic<int> n{0};
  settings::Settings s;
  s.max_attempts = 1;
  s.bulkhead.max_concurrent = 1000;
  s.policy_params.consecutive_failures = 100000;
  s.policy_params.min_results = 100000;
  auto c = make(
      [&](const transport::WireRequest&) -> Result<MockReply> {
        MockReply r;
        r.status = (n++ % 3 == 0) ? 500 : 200;
        r.delay = milliseconds(10);
        return r;
      },
      s);
  Outcomes out;
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&] {
      for (int i = 0; i < 250; ++i) c->submit(get("http://payments:8080/x"), out.sink());
    });
  }
  for (auto& t : submitters) t.join();
  std::vector<CallResult> r = out.wait(1000);
  ASSERT_EQ(r.size(), 1000u);
  const breaker::Counts counts = c->breaker().counts();
  EXPECT_EQ(counts.successes + counts.failures, 1000u);
  EXPECT_EQ(counts.failures, 334u);
}

// --- Against the real server. ------------------------------------------------------------------------------

class AsyncServerTest : public humus::test::WithTestServer {
 protected:
  AsyncServerTest() : runtime_([] {
    RuntimeOptions o;
    o.resolve.emplace_back(server().host_port("https"), server().address("https"));
    return o;
  }()) {}

  std::unique_ptr<Client> make_https(settings::Settings s = {}) {
    s.base_url = "https://" + server().host_port("https");
    s.tls.emplace();
    s.tls->ca_file = server().ca_file();
    s.bulkhead.max_concurrent = 100;
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }

  Runtime runtime_;
};

TEST_F(AsyncServerTest, ConcurrentCallsMultiplexOnOneHttp2Connection) {
  server().script("/mux", json::array({{{"status", 200}, {"body", "m"}, {"delay_ms", 100}}}));
  auto c = make_https();
  Outcomes out;
  for (int i = 0; i < 20; ++i) c->submit(get(server().url("https", "/mux")), out.sink());
  std::vector<CallResult> r = out.wait(20);
  for (const CallResult& one : r) {
    ASSERT_TRUE(one.ok()) << one.error.message();
    EXPECT_EQ(one.response->http_version, "2");
  }
  std::set<int> connections;
  for (const json& rec : server().requests("/mux")) connections.insert(rec["connection"].get<int>());
  EXPECT_EQ(connections.size(), 1u);
}

TEST_F(AsyncServerTest, RetriesAndTimeoutsWorkOnTheLoop) {
  server().script("/flaky", json::array({{{"status", 503}}, {{"status", 200}, {"body", "ok"}}}));
  server().script("/hang", json::array({{{"hang", true}}}));
  auto c = make_https();
  Outcomes out;
  c->submit(get(server().url("https", "/flaky")), out.sink());
  Request slow = get(server().url("https", "/hang"));
  slow.timeout = milliseconds(300);
  c->submit(slow, out.sink());
  std::vector<CallResult> r = out.wait(2);
  int ok = 0;
  int timed_out = 0;
  for (const CallResult& one : r) {
    if (one.ok() && one.response->body == "ok" && one.attempts == 2) ++ok;
    if (!one.ok() && one.error.code() == Code::kTimeout) ++timed_out;
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(timed_out, 1);
  EXPECT_EQ(server().requests("/flaky").size(), 2u);
}

// The server holds the request until the client leaves and the call may last 60 s: the cancel, made once the
// server holds the request, is all that can end it. The 30 s bound only tells a cancel acted on from one left
// for the deadline; no loaded machine comes near it.
TEST_F(AsyncServerTest, CancelEndsARealTransferAtOnce) {
  server().script("/hang", json::array({{{"hang", true}}}));
  settings::Settings s;
  s.timeout = seconds(60);
  s.attempt_timeout = seconds(60);
  auto c = make_https(s);
  Outcomes out;
  std::shared_ptr<AsyncCall> call = c->submit(get(server().url("https", "/hang")), out.sink());
  const auto until = std::chrono::steady_clock::now() + seconds(20);
  while (server().requests("/hang").empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(server().requests("/hang").size(), 1u);
  const auto t0 = std::chrono::steady_clock::now();
  call->cancel();
  std::vector<CallResult> r = out.wait(1, seconds(30));
  ASSERT_EQ(r.size(), 1u) << "the cancel did not end the call";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(30));
  ASSERT_FALSE(r[0].ok());
  EXPECT_EQ(r[0].error.code(), Code::kCancelled) << r[0].error.message();
  EXPECT_EQ(r[0].attempts, 1);
  EXPECT_EQ(c->breaker().counts().failures, 0u);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
