// Hedging (docs/retries.md §6.8) on the virtual clock and the mock transport: the copies' spans and trace
// records, the asynchronous and blocking drivers, the bounds that keep a hedge from going out, and a streamed
// call that is never hedged.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <vector>

#include "client/client.h"
#include "support/mock_script.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using testing::MockReply;
using namespace humus::test::mock;  // Script and the reply builders

MockReply after(MockReply r, int ms) {
  r.delay = milliseconds(ms);
  return r;
}

class HedgeMockTest : public ::testing::Test {
 protected:
  HedgeMockTest() : runtime_(virtual_options()) {}

  static RuntimeOptions virtual_options() {
    RuntimeOptions o;
    o.virtual_clock = true;
    o.seed = 37;
    return o;
  }

  std::unique_ptr<Client> make(std::vector<MockReply> replies, settings::Settings s = {}) {
    script_ = std::make_shared<Script>(std::move(replies));
    runtime_.set_mock_handler([script = script_](const transport::WireRequest& r) { return script->next(r); });
    s.base_url = "http://payments:8080";
    if (!s.hedge) {
      s.hedge.emplace();
      s.hedge->delay = "50ms";
    }
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Request req(std::string method = "GET") {
    Request r;
    r.method = std::move(method);
    r.url = "http://payments:8080/pay";
    return r;
  }

  Runtime runtime_;
  std::shared_ptr<Script> script_;
};

TEST_F(HedgeMockTest, TheHedgesSpanCarriesHumusHedgeAndItsResendCount) {
  std::mutex mu;
  std::vector<telemetry::Span> spans;
  runtime_.telemetry().set_span_sink([&](const telemetry::Span& s) {
    std::lock_guard<std::mutex> lock(mu);
    spans.push_back(s);
  });
  auto c = make({after(status(200, {}, "slow"), 500), after(status(200, {}, "fast"), 10)});
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok()) << r.error.message();
  EXPECT_EQ(r.response->body, "fast");
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(spans.size(), 2u);
  // The loser's span ends when the winner's answer cancels it: after the hedge's.
  EXPECT_TRUE(spans[0].hedge);
  EXPECT_EQ(spans[0].resend_count, 1);
  EXPECT_EQ(spans[0].status_code, 200);
  EXPECT_FALSE(spans[1].hedge);
  EXPECT_EQ(spans[1].resend_count, 0);
  EXPECT_EQ(spans[1].error_type, "cancelled");
  EXPECT_EQ(spans[0].trace_id, spans[1].trace_id);
  EXPECT_NE(spans[0].span_id, spans[1].span_id);
  // Each copy sent its own traceparent.
  ASSERT_EQ(script_->count(), 2u);
}

// F184
TEST_F(HedgeMockTest, TheTraceMarksTheHedgeAndTheLoser) {
  auto c = make({after(status(200, {}, "slow"), 500), after(status(200, {}, "fast"), 10)});
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok());
  const DecisionTrace& t = *r.response->trace;
  ASSERT_EQ(t.size(), 2u);
  // In the order the decisions were taken: the winner (the hedge), then the copy it cancelled.
  EXPECT_TRUE(t.at(0).hedge);
  EXPECT_FALSE(t.at(0).superseded);
  EXPECT_EQ(t.at(0).status, 200);
  EXPECT_EQ(t.at(0).decision, retry::Decision::kDone);
  EXPECT_FALSE(t.at(1).hedge);
  EXPECT_TRUE(t.at(1).superseded);
  EXPECT_EQ(t.at(1).error, Code::kCancelled);
  EXPECT_FALSE(t.at(1).classified);
}

TEST_F(HedgeMockTest, AsynchronousCallsHedgeToo) {
  auto c = make({after(status(200, {}, "slow"), 500), after(status(200, {}, "fast"), 10)});
  std::promise<CallResult> done;
  c->submit(req(), [&](CallResult r) { done.set_value(std::move(r)); });
  CallResult r = done.get_future().get();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->body, "fast");
  EXPECT_EQ(r.attempts, 2);
}

TEST_F(HedgeMockTest, HedgesCountAgainstMaxAttemptsAndMaxBoundsTheCopies) {
  settings::Settings s;
  s.hedge.emplace();
  s.hedge->delay = "50ms";
  s.hedge->max = 4;
  s.max_attempts = 3;
  // Every copy would take 500 ms: copies at 0, 50 and 100 ms, then max_attempts stops a 4th.
  auto c = make({after(status(200, {}, "slow"), 500)}, s);
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(script_->count(), 3u);
}

TEST_F(HedgeMockTest, NoHedgeForAForbiddenRetryOrAStreamedCall) {
  auto c = make({after(status(200, {}, "slow"), 500)});
  Request forbid = req();
  forbid.retry = retry::RetryOverride::kForbid;
  CallResult r = c->execute(forbid);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.attempts, 1);
  CallResult opened = c->open(req());
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(opened.attempts, 1);  // docs/retries.md §6.8: streamed calls are not hedged
  EXPECT_EQ(script_->count(), 2u);
}

// F183
TEST_F(HedgeMockTest, AnOpenBreakerSendsNoHedge) {
  settings::Settings s;
  s.hedge.emplace();
  s.hedge->delay = "50ms";
  s.breaker.probes = 1;
  s.policy_params.consecutive_failures = 1;
  s.max_attempts = 2;
  auto c = make({status(503), after(status(200, {}, "slow"), 500)}, s);
  // One 503 opens the breaker (its retry is rejected); after open_for, the one probe is the call's only copy.
  CallResult first = c->execute(req());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.response->status, 503);
  runtime_.virtual_clock()->advance(s.breaker.open_for);
  CallResult probe = c->execute(req());
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(probe.response->body, "slow");
  EXPECT_EQ(probe.attempts, 1);  // the hedge would be a second probe: half-open admits one
  EXPECT_EQ(script_->count(), 2u);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
