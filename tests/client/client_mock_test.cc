// The call loop end to end on the virtual clock and the mock transport: every rule of docs/origin.md §2, docs/retries.md §4 to docs/breaker.md §9 and
// §11 that the client composes, without sockets and without real waiting.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "client/client.h"
#include "support/mock_script.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::MockReply;
using namespace humus::test::mock;  // Script and the reply builders

class ClientMockTest : public ::testing::Test {
 protected:
  ClientMockTest() : runtime_(virtual_options()) {}

  static RuntimeOptions virtual_options() {
    RuntimeOptions o;
    o.virtual_clock = true;
    o.seed = 7;
    return o;
  }

  std::unique_ptr<Client> make(std::vector<MockReply> replies, settings::Settings s = {}) {
    script_ = std::make_shared<Script>(std::move(replies));
    runtime_.set_mock_handler([script = script_](const transport::WireRequest& r) { return script->next(r); });
    if (s.base_url.empty()) s.base_url = "http://payments:8080";
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Request req(std::string method = "GET", std::string path = "/pay") {
    Request r;
    r.method = std::move(method);
    r.url = "http://payments:8080" + path;
    return r;
  }

  Duration elapsed_since(Instant t) { return runtime_.clock().now() - t; }

  Runtime runtime_;
  std::shared_ptr<Script> script_;
};

// F81
TEST_F(ClientMockTest, GetIsRetriedThroughA503) {
  auto c = make({status(503), status(200, {}, "ok")});
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok()) << r.error.message();
  EXPECT_EQ(r.response->status, 200);
  EXPECT_EQ(r.response->body, "ok");
  EXPECT_EQ(r.response->attempts, 2);
  EXPECT_EQ(script_->count(), 2u);
}

TEST_F(ClientMockTest, EveryIdempotentMethodIsRetried) {
  for (const char* method : {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"}) {
    auto c = make({status(502), status(204)});
    CallResult r = c->execute(req(method));
    ASSERT_TRUE(r.ok()) << method;
    EXPECT_EQ(r.response->status, 204) << method;
    EXPECT_EQ(script_->count(), 2u) << method;
  }
}

TEST_F(ClientMockTest, PostIsNotRetried) {
  auto c = make({status(503), status(200)});
  CallResult r = c->execute(req("POST"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->status, 503);
  EXPECT_EQ(r.response->attempts, 1);
  EXPECT_EQ(script_->count(), 1u);
}

TEST_F(ClientMockTest, IdempotencyKeyMakesPostRetryableAndIsSent) {
  auto c = make({status(503), status(201)});
  Request r = req("POST");
  r.headers.add("Idempotency-Key", "k-1");
  r.body = std::make_shared<const std::string>("{\"amount\":1}");
  CallResult out = c->execute(r);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.response->status, 201);
  ASSERT_EQ(script_->count(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const transport::WireRequest sent = script_->received(i);
    ASSERT_NE(sent.headers.find("Idempotency-Key"), nullptr);
    EXPECT_EQ(*sent.headers.find("Idempotency-Key"), "k-1");
    EXPECT_EQ(*sent.body, "{\"amount\":1}");
  }
}

TEST_F(ClientMockTest, CallerCanForbidOrVouchForARetry) {
  auto c = make({status(503), status(200)});
  Request forbid = req("GET");
  forbid.retry = retry::RetryOverride::kForbid;
  EXPECT_EQ(c->execute(forbid).response->status, 503);
  EXPECT_EQ(script_->count(), 1u);

  c = make({status(503), status(200)});
  Request force = req("POST");
  force.retry = retry::RetryOverride::kForce;
  EXPECT_EQ(c->execute(force).response->status, 200);
  EXPECT_EQ(script_->count(), 2u);
}

TEST_F(ClientMockTest, AnswersThatWouldComeBackTheSameAreReturned) {
  for (int code : {500, 404, 501}) {
    auto c = make({status(code), status(200)});
    CallResult r = c->execute(req());
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.response->status, code);
    EXPECT_EQ(script_->count(), 1u) << code;
  }
}

TEST_F(ClientMockTest, TransportErrorOnGetIsRetried) {
  auto c = make({error(Code::kConnect), status(200)});
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->attempts, 2);
}

TEST_F(ClientMockTest, PostThatGotNoAnswerFailsWithoutRetry) {
  auto c = make({error(Code::kConnectionLost), status(200)});
  CallResult r = c->execute(req("POST"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code(), Code::kConnectionLost);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(script_->count(), 1u);
}

TEST_F(ClientMockTest, AttemptLimitReturnsTheLastResponse) {
  auto c = make({status(503)});
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->status, 503);
  EXPECT_EQ(r.response->attempts, 3);
  EXPECT_EQ(script_->count(), 3u);
}

// F76: a two-minute Retry-After, waited exactly on the virtual clock; less than half of it in real time says
// none was spent really waiting, and no loaded machine takes a minute for a mock call.
TEST_F(ClientMockTest, A429WaitsExactlyItsRetryAfterOnTheVirtualClock) {
  settings::Settings s;
  s.max_retry_after = seconds(120);
  s.timeout = seconds(240);
  auto c = make({status(429, header("Retry-After", "120")), status(200)}, s);
  const Instant t0 = runtime_.clock().now();
  const auto real0 = std::chrono::steady_clock::now();
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok()) << r.error.message();
  EXPECT_EQ(r.response->status, 200);
  EXPECT_EQ(r.response->attempts, 2);
  EXPECT_EQ(elapsed_since(t0), seconds(120));  // backoff after attempt 1 is at most 100 ms: Retry-After wins
  EXPECT_LT(std::chrono::steady_clock::now() - real0, seconds(60));
}

// F69
TEST_F(ClientMockTest, RetryAfterTooLongReturnsThe429AtOnce) {
  auto c = make({status(429, header("Retry-After", "60")), status(200)});  // max_retry_after = backoff_max 2s
  const Instant t0 = runtime_.clock().now();
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->status, 429);
  EXPECT_EQ(script_->count(), 1u);
  EXPECT_EQ(elapsed_since(t0), Duration::zero());
}

TEST_F(ClientMockTest, AgainstAHangingDependencyDefaultsMakeTwoAttemptsWithinTheDeadline) {
  auto c = make({hang()});
  const Instant t0 = runtime_.clock().now();
  CallResult r = c->execute(req());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code(), Code::kTimeout);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(elapsed_since(t0), seconds(10));
}

// F68
TEST_F(ClientMockTest, NoRetryIsStartedThatTheDeadlineCannotFinish) {
  settings::Settings s;
  s.timeout = milliseconds(1500);
  s.attempt_timeout = milliseconds(1000);
  s.connect_timeout = milliseconds(500);
  s.max_retry_after = seconds(5);
  auto c = make({status(503, header("Retry-After", "2")), status(200)}, s);
  const Instant t0 = runtime_.clock().now();
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->status, 503);  // a 2 s wait would end after the 1.5 s deadline: returned at once
  EXPECT_EQ(script_->count(), 1u);
  EXPECT_EQ(elapsed_since(t0), Duration::zero());
}

// F105
TEST_F(ClientMockTest, ConsecutiveFailuresOpenTheCircuitAndNothingMoreReachesTheNetwork) {
  settings::Settings s;
  s.max_attempts = 1;
  auto c = make({status(500)}, s);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c->execute(req()).response->status, 500);
  EXPECT_EQ(c->breaker().state(), breaker::State::kOpen);
  CallResult r = c->execute(req());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code(), Code::kRejected);
  EXPECT_EQ(r.attempts, 0);
  EXPECT_EQ(r.retry_after, seconds(10));
  EXPECT_EQ(script_->count(), 5u);
}

TEST_F(ClientMockTest, ARetryTheBreakerRejectsReturnsTheResponseInHand) {
  settings::Settings s;
  s.policy_params.consecutive_failures = 1;  // the first 503 opens the circuit
  auto c = make({status(503, {}, "busy"), status(200)}, s);
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok()) << r.error.message();  // docs/retries.md §6.6: the call got a response; it returns it
  EXPECT_EQ(r.response->status, 503);
  EXPECT_EQ(r.response->body, "busy");
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(script_->count(), 1u);
}

TEST_F(ClientMockTest, AnAttemptCutByTheDeadlineReturnsTheEarlierResponse) {
  settings::Settings s;
  s.timeout = seconds(3);
  s.attempt_timeout = seconds(3);
  auto c = make({status(503, {}, "first"), hang()}, s);
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok()) << r.error.message();
  EXPECT_EQ(r.response->status, 503);
  EXPECT_EQ(r.response->body, "first");
  EXPECT_EQ(r.attempts, 2);
}

// F79
TEST_F(ClientMockTest, AnUpstreamThatAnswers4xxDoesNotOpenTheCircuit) {
  auto c = make({status(404)});
  for (int i = 0; i < 30; ++i) (void)c->execute(req());
  EXPECT_EQ(c->breaker().state(), breaker::State::kClosed);
}

TEST_F(ClientMockTest, AfterTheCoolDownProbesDecide) {
  settings::Settings s;
  s.max_attempts = 1;
  auto c = make({status(500), status(500), status(500), status(500), status(500), status(200)}, s);
  for (int i = 0; i < 5; ++i) (void)c->execute(req());
  ASSERT_EQ(c->breaker().state(), breaker::State::kOpen);
  runtime_.virtual_clock()->advance(seconds(10));
  EXPECT_EQ(c->breaker().state(), breaker::State::kHalfOpen);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c->execute(req()).response->status, 200);
  EXPECT_EQ(c->breaker().state(), breaker::State::kClosed);
}

// F80
TEST_F(ClientMockTest, BudgetTurnsAnOutageIntoOneAttemptPerCall) {
  settings::Settings s;
  s.policy_params.consecutive_failures = 1000;  // keep the breaker out of it: the budget alone decides
  s.policy_params.min_results = 1000;
  auto c = make({status(503)}, s);
  int attempts = 0;
  for (int i = 0; i < 20; ++i) {
    CallResult r = c->execute(req());
    ASSERT_TRUE(r.ok());
    attempts += r.attempts;
  }
  EXPECT_EQ(attempts, 23);  // 3 + 2 + 18 × 1; 60 without a budget
}

TEST_F(ClientMockTest, CrossOriginRequestFailsBeforeAnythingIsSent) {
  auto c = make({status(200)});
  Request r = req();
  r.url = "https://ledger:8443/entries";
  CallResult out = c->execute(r);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error.code(), Code::kCrossOrigin);
  EXPECT_EQ(out.error.message(), "request to https://ledger:8443 on a client for http://payments:8080");
  EXPECT_EQ(script_->count(), 0u);
}

TEST_F(ClientMockTest, SameOriginWithDefaultPortAndOtherCaseIsOneOrigin) {
  settings::Settings s;
  s.base_url = "http://PAYMENTS:80";
  auto c = make({status(200)}, s);
  Request r = req();
  r.url = "http://payments/x";
  EXPECT_TRUE(c->execute(r).ok());
}

TEST_F(ClientMockTest, OnlyACanonicalSpellingSkipsTheFullOriginCheck) {
  auto c = make({status(200)});
  EXPECT_TRUE(c->spelled_as_origin("http://payments:8080/x"));
  EXPECT_TRUE(c->spelled_as_origin("http://payments:8080?q=1"));
  EXPECT_TRUE(c->spelled_as_origin("http://payments:8080"));
  EXPECT_FALSE(c->spelled_as_origin("http://payments:80800/x"));
  EXPECT_FALSE(c->spelled_as_origin("http://payments:8080@evil:8080/x"));
  EXPECT_FALSE(c->spelled_as_origin("http://payments:8080.evil/x"));
  EXPECT_FALSE(c->spelled_as_origin("http://payments:8080/a b"));
  EXPECT_FALSE(c->spelled_as_origin("http://PAYMENTS:8080/x"));  // the same origin, checked the long way
  Request r = req();
  r.url = "http://payments:8080@evil:8080/x";
  CallResult out = c->execute(r);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error.code(), Code::kInvalidArgument);  // user-info
  EXPECT_EQ(script_->count(), 0u);

  settings::Settings s;
  s.base_url = "https://payments";
  s.tls.emplace();
  s.tls->ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  auto tls = make({status(200)}, s);
  ASSERT_NE(tls, nullptr);
  EXPECT_TRUE(tls->spelled_as_origin("https://payments/x"));
  EXPECT_TRUE(tls->spelled_as_origin("https://payments:443/x"));
}

// F109
TEST_F(ClientMockTest, HeaderInjectionIsRefusedBeforeSending) {
  auto c = make({status(200)});
  Request r = req();
  r.headers.add("X-Note", "a\r\nInjected: yes");
  CallResult out = c->execute(r);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error.code(), Code::kInvalidArgument);
  ASSERT_FALSE(out.error.fields().empty());
  EXPECT_EQ(out.error.fields()[0], "X-Note");
  EXPECT_EQ(script_->count(), 0u);
}

TEST_F(ClientMockTest, BodyOver64KiBIsNotRetriedAndComesBackIntact) {
  const std::string big(64 * 1024 + 1, 'x');
  auto c = make({status(503, {}, big), status(200)});
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->status, 503);
  EXPECT_EQ(r.response->body.size(), big.size());
  EXPECT_EQ(script_->count(), 1u);
}

TEST_F(ClientMockTest, ConfiguredHeadersTravelAndCallHeadersWin) {
  settings::Settings s;
  s.headers.add("X-Service", "checkout");
  s.headers.add("X-Env", "prod");
  auto c = make({status(200)}, s);
  Request r = req();
  r.headers.add("X-Env", "canary");
  ASSERT_TRUE(c->execute(r).ok());
  const transport::WireRequest sent = script_->received(0);
  EXPECT_EQ(*sent.headers.find("X-Service"), "checkout");
  EXPECT_EQ(*sent.headers.find("X-Env"), "canary");
}

TEST_F(ClientMockTest, TheCallContextTravelsInSpecOrder) {
  settings::Settings s;
  s.headers.add("X-Request-ID", "configured");  // the context's wins over configuration
  s.headers.add("X-Team", "payments");
  auto c = make({status(200)}, s);
  Request r = req();
  r.context.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  r.context.tracestate = "vendor=1";
  r.context.baggage = "tenant=acme";
  r.context.request_id = "req-7";
  r.context.authorization = "Bearer user-token";
  r.headers.add("tracestate", "call=own");  // the call's own header wins over the context
  ASSERT_TRUE(c->execute(r).ok());
  const transport::WireRequest sent = script_->received(0);
  EXPECT_EQ(*sent.headers.find("X-Request-ID"), "req-7");
  EXPECT_EQ(*sent.headers.find("X-Team"), "payments");
  EXPECT_EQ(*sent.headers.find("traceparent"), r.context.traceparent);
  EXPECT_EQ(*sent.headers.find("tracestate"), "call=own");
  EXPECT_EQ(*sent.headers.find("baggage"), "tenant=acme");
  EXPECT_EQ(sent.headers.find("Authorization"), nullptr);  // not without forward_authorization
}

TEST_F(ClientMockTest, OnlyABearerTokenIsForwardedAndOnlyWhenAsked) {
  settings::Settings s;
  s.forward_authorization = true;
  auto c = make({status(200)}, s);
  Request bearer = req();
  bearer.context.authorization = "Bearer user-token";
  ASSERT_TRUE(c->execute(bearer).ok());
  EXPECT_EQ(*script_->received(0).headers.find("Authorization"), "Bearer user-token");
  Request basic = req();
  basic.context.authorization = "Basic dXNlcjpwdw==";
  ASSERT_TRUE(c->execute(basic).ok());
  EXPECT_EQ(script_->received(1).headers.find("Authorization"), nullptr);
  Request none = req();
  ASSERT_TRUE(c->execute(none).ok());
  EXPECT_EQ(script_->received(2).headers.find("X-Request-ID"), nullptr);  // never invented
}

// F83
TEST_F(ClientMockTest, SameOriginRedirectIsFollowedCrossOriginIsReturned) {
  auto c = make({status(302, header("Location", "/moved")), status(200, {}, "here")});
  CallResult r = c->execute(req("GET", "/old"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->status, 200);
  EXPECT_EQ(r.response->url, "http://payments:8080/moved");
  EXPECT_EQ(script_->received(1).url, "http://payments:8080/moved");

  c = make({status(307, header("Location", "https://ledger/x")), status(200)});
  r = c->execute(req());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->status, 307);
  EXPECT_EQ(script_->count(), 1u);
}

// F82
TEST_F(ClientMockTest, AtMostTenRedirectsPerRequest) {
  auto c = make({status(302, header("Location", "/again"))});
  CallResult r = c->execute(req());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->status, 302);
  EXPECT_EQ(script_->count(), 11u);  // the request and ten redirects
}

// F88
TEST_F(ClientMockTest, SeeOtherTurnsPostIntoGetWithoutBody) {
  auto c = make({status(303, header("Location", "/result")), status(200)});
  Request r = req("POST");
  r.body = std::make_shared<const std::string>("data");
  ASSERT_TRUE(c->execute(r).ok());
  const transport::WireRequest second = script_->received(1);
  EXPECT_EQ(second.method, "GET");
  EXPECT_EQ(second.body, nullptr);
}

// F104
TEST_F(ClientMockTest, BulkheadTurnsAwayTheCallPastItsLimit) {
  settings::Settings s;
  s.bulkhead.max_concurrent = 1;
  s.bulkhead.wait = Duration::zero();
  // The first call hangs inside its attempt; while it does, a second call finds no slot.
  MockReply slow = status(200);
  slow.delay = seconds(3);
  auto c = make({slow}, s);
  runtime_.virtual_clock()->set_auto_advance(false);
  std::thread first([&] { EXPECT_TRUE(c->execute(req()).ok()); });
  ASSERT_TRUE(runtime_.virtual_clock()->wait_for_sleepers(1));
  CallResult second = c->execute(req());
  runtime_.virtual_clock()->advance(seconds(3));
  first.join();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error.code(), Code::kBulkheadFull);
  EXPECT_EQ(script_->count(), 1u);
}

TEST_F(ClientMockTest, CancelDuringBackoffReturnsTheBufferedResponse) {
  settings::Settings s;
  s.max_retry_after = seconds(5);
  auto c = make({status(503, header("Retry-After", "3"), "busy"), status(200)}, s);
  CancelToken cancel;
  runtime_.virtual_clock()->set_auto_advance(false);
  CallResult out;
  std::thread caller([&] { out = c->execute(req(), &cancel); });
  ASSERT_TRUE(runtime_.virtual_clock()->wait_for_sleepers(1));
  cancel.cancel();
  caller.join();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.response->status, 503);
  EXPECT_EQ(out.response->body, "busy");
  EXPECT_EQ(script_->count(), 1u);
}

TEST_F(ClientMockTest, CancelDuringAnAttemptEndsTheCallAndIsIgnoredByTheBreaker) {
  auto c = make({hang()});
  CancelToken cancel;
  runtime_.virtual_clock()->set_auto_advance(false);
  CallResult out;
  std::thread caller([&] { out = c->execute(req(), &cancel); });
  ASSERT_TRUE(runtime_.virtual_clock()->wait_for_sleepers(1));
  cancel.cancel();
  caller.join();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error.code(), Code::kCancelled);
  const breaker::Counts counts = c->breaker().counts();
  EXPECT_EQ(counts.failures, 0u);
  EXPECT_EQ(counts.successes, 0u);
}

TEST_F(ClientMockTest, CrossFieldRulesAreProgramErrors) {
  settings::Settings s;
  s.base_url = "http://payments:8080";
  s.backoff_base = seconds(3);  // > backoff_max 2 s
  Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kProgram);
}

TEST_F(ClientMockTest, VirtualClockWithoutMockIsMisuse) {
  runtime_.set_mock_handler(nullptr);
  settings::Settings s;
  s.base_url = "http://payments:8080";
  Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kMisuse);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
