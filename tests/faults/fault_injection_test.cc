// Failure injection end to end (docs/failure-injection.md §14) on the virtual clock and the mock transport: injected faults are
// real failures to the client — classified, retried, counted — and the scenario never travels unless asked.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "client/client.h"
#include "support/mock_script.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using namespace humus::test::mock;  // Script and the reply builders
using std::chrono::milliseconds;

constexpr char kPoint[] = "http:payments:8080";

class FaultInjectionTest : public ::testing::Test {
 protected:
  explicit FaultInjectionTest(bool faults = true) : runtime_(options(faults)) {}

  static RuntimeOptions options(bool faults) {
    RuntimeOptions o;
    o.virtual_clock = true;
    o.seed = 11;
    o.faults = faults;
    return o;
  }

  std::unique_ptr<Client> make(std::vector<MockReply> replies, settings::Settings s = {}) {
    script_ = std::make_shared<Script>(std::move(replies));
    runtime_.set_mock_handler([script = script_](const transport::WireRequest& r) { return script->next(r); });
    s.base_url = "http://payments:8080";
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    if (!c.ok()) {
      ADD_FAILURE() << c.status().message();
      return nullptr;
    }
    return std::move(c).value();
  }

  static Request with_scenario(std::string scenario, std::string method = "GET") {
    Request r;
    r.method = std::move(method);
    r.url = "http://payments:8080/pay";
    r.context.baggage = "tenant=acme,humus.fault=" + scenario;
    return r;
  }

  Runtime runtime_;
  std::shared_ptr<Script> script_;
};

TEST_F(FaultInjectionTest, AnInjectedStatusIsRetriedAndCountedLikeARealOne) {
  auto c = make({status(200, {}, "real")});
  CallResult r = c->execute(with_scenario(std::string(kPoint) + "=status:503"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response->status, 503);
  EXPECT_EQ(r.attempts, 3);         // the attempt limit, as for a real 503
  EXPECT_EQ(script_->count(), 0u);  // nothing reached the dependency
  EXPECT_EQ(c->breaker().counts().failures, 3u);
}

TEST_F(FaultInjectionTest, AnAbortIsALostConnection) {
  auto c = make({status(200)});
  CallResult get = c->execute(with_scenario(std::string(kPoint) + "=abort"));
  ASSERT_FALSE(get.ok());
  EXPECT_EQ(get.error.code(), Code::kConnectionLost);
  EXPECT_NE(get.error.message().find("humus.fault"), std::string::npos) << get.error.message();
  EXPECT_EQ(get.attempts, 3);  // a GET is retried through it
  CallResult post = c->execute(with_scenario(std::string(kPoint) + "=abort", "POST"));
  EXPECT_EQ(post.attempts, 1);  // a POST that got no answer is not
  EXPECT_EQ(script_->count(), 0u);
}

TEST_F(FaultInjectionTest, ADelayHoldsTheAttemptBackThenSendsIt) {
  auto c = make({status(200, {}, "late")});
  const Instant start = runtime_.clock().now();
  CallResult r = c->execute(with_scenario(std::string(kPoint) + "=delay:1500ms"));
  ASSERT_TRUE(r.ok()) << r.error.message();
  EXPECT_EQ(r.response->body, "late");
  EXPECT_EQ(runtime_.clock().now() - start, milliseconds(1500));
  EXPECT_EQ(script_->count(), 1u);
}

TEST_F(FaultInjectionTest, ADelayPastTheAttemptTimeoutTimesTheAttemptOut) {
  settings::Settings s;
  s.attempt_timeout = milliseconds(300);
  s.connect_timeout = milliseconds(100);
  s.timeout = milliseconds(2000);
  auto c = make({status(200)}, s);
  ASSERT_NE(c, nullptr);
  CallResult r = c->execute(with_scenario(std::string(kPoint) + "=delay:10s"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code(), Code::kTimeout);
  EXPECT_GE(r.attempts, 2);  // each attempt timed out at 300 ms and was retried
  EXPECT_EQ(script_->count(), 0u);
}

TEST_F(FaultInjectionTest, AProbabilityInjectsIntoAShareOfAttempts) {
  settings::Settings s;
  s.max_attempts = 1;
  s.policy_params.consecutive_failures = 1000000;  // keep the breaker out of the count
  s.policy_params.failure_rate = 1.0;
  auto c = make({status(200)}, s);
  int injected = 0;
  constexpr int kCalls = 2000;
  for (int i = 0; i < kCalls; ++i) {
    CallResult r = c->execute(with_scenario(std::string(kPoint) + "=status:500@0.25"));
    ASSERT_TRUE(r.ok());
    if (r.response->status == 500) ++injected;
  }
  EXPECT_EQ(static_cast<size_t>(kCalls - injected), script_->count());
  EXPECT_NEAR(injected / double(kCalls), 0.25, 0.04);  // binomial: sd ≈ 0.0097
}

TEST_F(FaultInjectionTest, TheScenarioIsStrippedUnlessForwarded) {
  auto c = make({status(200)});
  ASSERT_TRUE(c->execute(with_scenario("http:ledger:8443=abort")).ok());
  EXPECT_EQ(*script_->received(0).headers.find("baggage"), "tenant=acme");

  Request only = with_scenario("http:ledger:8443=abort");
  only.context.baggage = "humus.fault=http:ledger:8443=abort";
  ASSERT_TRUE(c->execute(only).ok());
  EXPECT_EQ(script_->received(1).headers.find("baggage"), nullptr);  // nothing left: no header

  settings::Settings s;
  s.forward_scenario = true;
  auto forwarding = make({status(200)}, s);
  ASSERT_TRUE(forwarding->execute(with_scenario("http:ledger:8443=abort")).ok());
  EXPECT_EQ(*script_->received(0).headers.find("baggage"), "tenant=acme,humus.fault=http:ledger:8443=abort");
}

TEST_F(FaultInjectionTest, AScenarioInTheCallsOwnBaggageHeaderCounts) {
  auto c = make({status(200)});
  Request r;
  r.url = "http://payments:8080/pay";
  r.headers.add("baggage", std::string("humus.fault=") + kPoint + "=status:418");
  CallResult out = c->execute(r);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.response->status, 418);
  EXPECT_EQ(script_->count(), 0u);
}

TEST_F(FaultInjectionTest, AMalformedScenarioFailsTheCallNamingIt) {
  auto c = make({status(200)});
  CallResult r = c->execute(with_scenario(std::string(kPoint) + "=explode"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error.code(), Code::kInvalidArgument);
  EXPECT_EQ(r.error.fields(), std::vector<std::string>{"baggage"});
  EXPECT_EQ(r.attempts, 0);
  EXPECT_EQ(script_->count(), 0u);
}

// The asynchronous driver runs the same faults through the loop: a delay is a loop timer, cancellable.
TEST_F(FaultInjectionTest, AsyncCallsSeeTheSameFaultsAndADelayCanBeCancelled) {
  auto c = make({status(200, {}, "ok")});
  std::mutex mu;
  std::condition_variable cv;
  std::vector<CallResult> done;
  auto collect = [&](CallResult r) {
    std::lock_guard<std::mutex> lock(mu);
    done.push_back(std::move(r));
    cv.notify_all();
  };
  auto wait_for = [&](size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return done.size() >= n; }));
  };

  c->submit(with_scenario(std::string(kPoint) + "=status:502"), collect);
  wait_for(1);
  ASSERT_TRUE(done[0].ok());
  EXPECT_EQ(done[0].response->status, 502);
  EXPECT_EQ(done[0].attempts, 3);

  c->submit(with_scenario(std::string(kPoint) + "=delay:200ms"), collect);
  wait_for(2);
  ASSERT_TRUE(done[1].ok()) << done[1].error.message();
  EXPECT_EQ(done[1].response->body, "ok");
  EXPECT_EQ(script_->count(), 1u);

  settings::Settings s;
  s.attempt_timeout = std::chrono::seconds(30);
  s.timeout = std::chrono::seconds(60);
  auto slow = make({status(200)}, s);
  testing::VirtualClock::Hold still(*runtime_.virtual_clock());  // time stands still: the delay stays pending
  std::shared_ptr<AsyncCall> call = slow->submit(with_scenario(std::string(kPoint) + "=delay:20s"), collect);
  call->cancel();
  wait_for(3);
  ASSERT_FALSE(done[2].ok());
  EXPECT_EQ(done[2].error.code(), Code::kCancelled);
  EXPECT_EQ(script_->count(), 0u);
}

class FaultsDisabledTest : public FaultInjectionTest {
 protected:
  FaultsDisabledTest() : FaultInjectionTest(false) {}
};

TEST_F(FaultsDisabledTest, NothingIsEvaluatedOrStripped) {
  auto c = make({status(200)});
  Request r = with_scenario(std::string(kPoint) + "=explode");  // not even read
  CallResult out = c->execute(r);
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->status, 200);
  EXPECT_EQ(*script_->received(0).headers.find("baggage"), r.context.baggage);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
