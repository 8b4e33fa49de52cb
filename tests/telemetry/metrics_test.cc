// docs/telemetry.md §13.2 and §13.3 on the virtual clock and the mock transport: what each instrument counts for a call
// retried through a 503, a call rejected by an open breaker, a cancelled wait; how the registry sums clients
// by origin and keeps the counts of clients gone; one log record per breaker state change; both expositions.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "client/client.h"
#include "telemetry/exposition.h"
#include "telemetry/prometheus_parser.h"

namespace humus::telemetry {
namespace {
namespace HUMUS_UNITY_ID {

using client::CallResult;
using client::Client;
using client::Request;
using client::Runtime;
using client::RuntimeOptions;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::MockReply;

MockReply reply(int code, Duration delay = Duration::zero()) {
  MockReply r;
  r.status = code;
  r.delay = delay;
  return r;
}

size_t idx(retry::Decision d) { return static_cast<size_t>(d); }
size_t idx(breaker::Outcome o) { return call_series(o); }
size_t idx(breaker::State s) { return static_cast<size_t>(s); }

class MetricsTest : public ::testing::Test {
 protected:
  MetricsTest() : runtime_(options()) {}
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.virtual_clock = true;
    o.seed = 3;
    return o;
  }

  // Replies in order, the last repeating.
  std::unique_ptr<Client> make(std::vector<MockReply> replies, std::string base_url = "http://payments:8080",
                               settings::Settings s = {}) {
    auto script = std::make_shared<std::vector<MockReply>>(std::move(replies));
    auto next = std::make_shared<std::atomic<size_t>>(0);
    runtime_.set_mock_handler([script, next](const transport::WireRequest&) -> Result<MockReply> {
      const size_t i = next->fetch_add(1);
      return (*script)[std::min(i, script->size() - 1)];
    });
    s.base_url = std::move(base_url);
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }

  static Request get(std::string url = "http://payments:8080/pay") {
    Request r;
    r.url = std::move(url);
    return r;
  }

  OriginSeries only_origin() {
    Snapshot snap = runtime_.telemetry().metrics().collect();
    EXPECT_EQ(snap.origins.size(), 1u);
    return snap.origins.empty() ? OriginSeries{} : snap.origins[0];
  }

  Runtime runtime_;
};

TEST(HistogramTest, BucketsAreUpperInclusiveLikePrometheusLe) {
  Histogram h(kDurationBounds);
  for (double v : {0.0, 0.005, 0.0051, 10.0, 10.5, 0.3}) h.record(v);
  const HistogramData d = h.read();
  EXPECT_EQ(d.buckets[0], 2u);   // le 0.005: the durations have no 0 bound
  EXPECT_EQ(d.buckets[1], 1u);   // (0.005, 0.01]
  EXPECT_EQ(d.buckets[7], 1u);   // (0.25, 0.5]
  EXPECT_EQ(d.buckets[13], 1u);  // (7.5, 10]
  EXPECT_EQ(d.buckets[14], 1u);  // (10, +Inf)
  EXPECT_EQ(d.buckets[15], 0u);  // beyond this histogram's buckets
  EXPECT_EQ(d.count(), 6u);
  EXPECT_DOUBLE_EQ(d.sum, 0.005 + 0.0051 + 10 + 10.5 + 0.3);
}

TEST(HistogramTest, BodySizesKeepTheirZeroBound) {
  Histogram h(kSizeBounds);
  for (double v : {0.0, 0.0, 1.0, 10001.0}) h.record(v);
  const HistogramData d = h.read();
  EXPECT_EQ(d.buckets[0], 2u);   // le 0: no body
  EXPECT_EQ(d.buckets[1], 1u);   // (0, 5]
  EXPECT_EQ(d.buckets[15], 1u);  // (10000, +Inf)
  EXPECT_EQ(d.count(), 4u);
}

TEST_F(MetricsTest, RetryThroughA503CountsEachAttemptAndEachDecision) {
  auto c = make({reply(503, milliseconds(300)), reply(200, milliseconds(40))});
  Request r = get();
  r.method = "PUT";
  r.body = std::make_shared<const std::string>(100, 'x');
  CallResult out = c->execute(r);
  ASSERT_TRUE(out.ok()) << out.error.message();
  ASSERT_EQ(out.attempts, 2);

  const OriginSeries s = only_origin();
  EXPECT_EQ(s.address, "payments");
  EXPECT_EQ(s.port, 8080);
  // One duration per attempt, on the virtual clock: 0.3 s in (0.25, 0.5], 0.04 s in (0.025, 0.05].
  EXPECT_EQ(s.duration.count(), 2u);
  EXPECT_EQ(s.duration.buckets[7], 1u);
  EXPECT_EQ(s.duration.buckets[3], 1u);
  EXPECT_NEAR(s.duration.sum, 0.34, 1e-9);
  // 100 bytes per attempt, in (75, 100].
  EXPECT_EQ(s.body_size.buckets[6], 2u);
  EXPECT_EQ(s.body_size.count(), 2u);
  EXPECT_DOUBLE_EQ(s.body_size.sum, 200);
  EXPECT_EQ(s.calls[idx(breaker::Outcome::kFailure)], 1u);
  EXPECT_EQ(s.calls[idx(breaker::Outcome::kSuccess)], 1u);
  EXPECT_EQ(s.calls[kRejectedSeries], 0u);
  EXPECT_EQ(s.decisions[idx(retry::Decision::kAgain)], 1u);
  EXPECT_EQ(s.decisions[idx(retry::Decision::kDone)], 1u);
  EXPECT_EQ(s.decisions[idx(retry::Decision::kStopped)], 0u);
  EXPECT_EQ(s.breakers[idx(breaker::State::kClosed)], 1u);
  EXPECT_EQ(s.transitions, (std::array<uint64_t, kStates>{0, 0, 0}));
}

TEST_F(MetricsTest, TheAttemptLimitIsExhausted) {
  auto c = make({reply(503)});
  CallResult out = c->execute(get());
  ASSERT_TRUE(out.ok());
  const OriginSeries s = only_origin();
  EXPECT_EQ(s.decisions[idx(retry::Decision::kAgain)], 2u);
  EXPECT_EQ(s.decisions[idx(retry::Decision::kExhausted)], 1u);
  EXPECT_EQ(s.calls[idx(breaker::Outcome::kFailure)], 3u);
}

TEST_F(MetricsTest, ARejectedCallCountsRejectedAndStoppedAndTheTransition) {
  settings::Settings s;
  s.max_attempts = 1;
  auto c = make({reply(503)}, "http://payments:8080", s);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c->execute(get()).ok());
  ASSERT_EQ(c->breaker().state(), breaker::State::kOpen);
  CallResult rejected = c->execute(get());
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error.code(), Code::kRejected);

  const OriginSeries o = only_origin();
  EXPECT_EQ(o.calls[idx(breaker::Outcome::kFailure)], 5u);
  EXPECT_EQ(o.calls[kRejectedSeries], 1u);
  EXPECT_EQ(o.decisions[idx(retry::Decision::kExhausted)], 5u);
  EXPECT_EQ(o.decisions[idx(retry::Decision::kStopped)], 1u);
  EXPECT_EQ(o.transitions[idx(breaker::State::kOpen)], 1u);
  EXPECT_EQ(o.breakers[idx(breaker::State::kOpen)], 1u);
  EXPECT_EQ(o.breakers[idx(breaker::State::kClosed)], 0u);
  EXPECT_EQ(o.duration.count(), 5u);  // the rejected attempt sent nothing: no duration
}

TEST_F(MetricsTest, TheGaugeIsReadAtCollectionAndAdvancesLazily) {
  settings::Settings s;
  s.max_attempts = 1;
  s.breaker.open_for = seconds(10);
  auto c = make({reply(503)}, "http://payments:8080", s);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c->execute(get()).ok());
  runtime_.virtual_clock()->advance(seconds(11));
  const OriginSeries o = only_origin();  // no call since: the collection itself sees half-open
  EXPECT_EQ(o.breakers[idx(breaker::State::kHalfOpen)], 1u);
  EXPECT_EQ(o.transitions[idx(breaker::State::kHalfOpen)], 1u);
}

TEST_F(MetricsTest, ACancelledWaitIsStopped) {
  CancelToken cancel;
  // The caller gives up while the first attempt is out: its 503 is retryable, and the backoff wait is cut
  // short.
  runtime_.set_mock_handler([&](const transport::WireRequest&) -> Result<MockReply> {
    cancel.cancel();
    return reply(503);
  });
  settings::Settings s;
  s.base_url = "http://payments:8080";
  Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
  ASSERT_TRUE(c.ok());
  CallResult out = c.value()->execute(get(), &cancel);
  ASSERT_TRUE(out.ok());  // the buffered 503 (docs/bodies.md §7)
  EXPECT_EQ(out.attempts, 1);
  const OriginSeries o = only_origin();
  EXPECT_EQ(o.decisions[idx(retry::Decision::kAgain)], 1u);
  EXPECT_EQ(o.decisions[idx(retry::Decision::kStopped)], 1u);
  EXPECT_EQ(o.calls[idx(breaker::Outcome::kFailure)], 1u);
}

TEST_F(MetricsTest, ClientsOfOneOriginAreSummedAndCountsOutliveTheClient) {
  auto a = make({reply(200)});
  auto b = make({reply(200)}, "http://PAYMENTS:8080");
  auto other = make({reply(200)}, "http://ledger");
  ASSERT_TRUE(a->execute(get()).ok());
  ASSERT_TRUE(b->execute(get()).ok());
  ASSERT_TRUE(other->execute(get("http://ledger/x")).ok());
  b.reset();
  Snapshot snap = runtime_.telemetry().metrics().collect();
  ASSERT_EQ(snap.origins.size(), 2u);
  EXPECT_EQ(snap.origins[0].address, "ledger");  // sorted
  EXPECT_EQ(snap.origins[0].port, 80);
  EXPECT_EQ(snap.origins[1].address, "payments");
  EXPECT_EQ(snap.origins[1].calls[idx(breaker::Outcome::kSuccess)], 2u);       // b's call is kept
  EXPECT_EQ(snap.origins[1].breakers[idx(breaker::State::kClosed)], 1u);  // but not its breaker
  a.reset();
  other.reset();
  snap = runtime_.telemetry().metrics().collect();
  EXPECT_EQ(snap.origins[1].calls[idx(breaker::Outcome::kSuccess)], 2u);
  EXPECT_EQ(snap.origins[1].breakers, (std::array<uint64_t, kStates>{0, 0, 0}));
}

// ---- The histograms' attributes (OpenTelemetry's semantic conventions)
// --------------------------------------------

// The attribute sets of an origin's duration series, as "METHOD status error.type protocol" (empty fields
// for those absent), with their sample counts.
std::map<std::string, uint64_t> duration_series(const OriginSeries& o) {
  std::map<std::string, uint64_t> out;
  for (const AttemptSeries& series : o.attempts) {
    std::string line;
    for (const Attribute& a : attributes_of(series))
      line += (line.empty() ? "" : " ") + std::string(a.name) + "=" + a.value;
    out[line] += series.duration.count();
    EXPECT_EQ(series.duration.count(), series.body_size.count());
  }
  return out;
}

TEST_F(MetricsTest, EachAttemptIsCountedUnderItsMethodStatusErrorAndProtocol) {
  settings::Settings s;
  s.max_attempts = 3;
  MockReply lost;
  lost.error = Code::kConnectionLost;
  auto c = make({lost, reply(503), reply(200)}, "http://payments:8080", s);
  Request r = get();
  r.method = "PUT";
  r.body = std::make_shared<const std::string>(10, 'x');
  ASSERT_TRUE(c->execute(r).ok());
  Request purge = get();
  purge.method = "PURGE";  // not a method the conventions name
  ASSERT_TRUE(c->execute(purge).ok());
  const OriginSeries o = only_origin();
  EXPECT_EQ(
      duration_series(o),
      (std::map<std::string, uint64_t>{
          {"http.request.method=PUT error.type=connection_lost", 1},
          {"http.request.method=PUT http.response.status_code=503 error.type=503 "
           "network.protocol.version=1.1",
           1},
          {"http.request.method=PUT http.response.status_code=200 network.protocol.version=1.1", 1},
          {"http.request.method=_OTHER http.response.status_code=200 network.protocol.version=1.1", 1}}));
  EXPECT_EQ(o.duration.count(), 4u);  // the origin's total is every attempt
  EXPECT_EQ(o.body_size.count(), 4u);
}

TEST_F(MetricsTest, AttributeSetsBeyondTheLimitGoToTheOverflowSeries) {
  settings::Settings s;
  s.max_attempts = 1;
  std::atomic<int> next{200};
  runtime_.set_mock_handler(
      [&](const transport::WireRequest&) -> Result<MockReply> { return reply(next++); });
  s.base_url = "http://payments:8080";
  Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
  ASSERT_TRUE(c.ok());
  constexpr size_t kCalls = kAttemptSeriesPerClient + 16;  // statuses 200..279, each a set of its own
  for (size_t i = 0; i < kCalls; ++i) ASSERT_TRUE(c.value()->execute(get()).ok());
  const OriginSeries o = only_origin();
  ASSERT_EQ(o.attempts.size(), kAttemptSeriesPerClient + 1);
  const AttemptSeries& overflow = o.attempts.front();  // kOverflowKey sorts first
  ASSERT_EQ(overflow.key, kOverflowKey);
  EXPECT_EQ(overflow.duration.count(), 16u);
  const std::vector<Attribute> attributes = attributes_of(overflow);
  ASSERT_EQ(attributes.size(), 1u);
  EXPECT_STREQ(attributes[0].name, "otel.metric.overflow");
  EXPECT_EQ(o.duration.count(), kCalls);  // nothing lost
  const nlohmann::json j = nlohmann::json::parse(to_json(runtime_.telemetry().metrics().collect()));
  EXPECT_EQ(j["metrics"][0]["points"][0]["attributes"]["otel.metric.overflow"], true);
}

// Issue 15, item 6: an idle client costs at most 8 KiB. Its metrics hold the table of attribute sets (64
// series of two histograms, about 20 KiB) only from its first attempt on.
TEST(ClientMetricsTest, AClientThatNeverCalledHoldsNoTableOfAttributeSets) {
  EXPECT_LT(sizeof(ClientMetrics), 1024u);
  ClientMetrics idle("payments", 8080);
  OriginSeries o;
  idle.read_into(o);
  EXPECT_TRUE(o.attempts.empty());
  EXPECT_EQ(o.duration.count(), 0u);
  idle.attempt(std::chrono::milliseconds(3), 10, AttemptAttributes::of("GET", 200, "1.1", Code::kOk));
  idle.read_into(o);
  ASSERT_EQ(o.attempts.size(), 1u);
  EXPECT_EQ(o.attempts[0].duration.count(), 1u);
}

TEST(ClientMetricsTest, ThreadsRecordingNewAttributeSetsAtOnceLoseNothing) {
  ClientMetrics metrics("payments", 8080);
  constexpr int kThreads = 8, kPerThread = 2000, kStatuses = 40;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&metrics, t] {
      for (int i = 0; i < kPerThread; ++i) {
        // Every thread walks every status, each from a different start: the first records of a set race.
        const int status = 200 + (i + t * 7) % kStatuses;
        metrics.attempt(std::chrono::milliseconds(1), 0,
                        AttemptAttributes::of("GET", status, "2", Code::kOk));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  OriginSeries o;
  metrics.read_into(o);
  ASSERT_EQ(o.attempts.size(), static_cast<size_t>(kStatuses));  // each set claimed one slot, once
  for (const AttemptSeries& series : o.attempts) {
    EXPECT_EQ(series.duration.count(), static_cast<uint64_t>(kThreads * kPerThread / kStatuses));
    EXPECT_EQ(AttemptAttributes::from_key(series.key).protocol_name(), std::string("2"));
  }
  EXPECT_EQ(o.duration.count(), static_cast<uint64_t>(kThreads * kPerThread));
}

TEST(AttemptAttributesTest, KeysRoundTripAndNeverCollideWithTheEmptyOrOverflowKey) {
  for (const char* method :
       {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}) {
    const AttemptAttributes a = AttemptAttributes::of(method, 599, "1.0", Code::kOk);
    const AttemptAttributes back = AttemptAttributes::from_key(a.key());
    EXPECT_STREQ(back.method_name(), method);
    EXPECT_EQ(back.status, 599);
    EXPECT_STREQ(back.protocol_name(), "1.0");
    EXPECT_EQ(back.error_type(), "599");
    EXPECT_NE(a.key(), 0u);
    EXPECT_NE(a.key(), kOverflowKey);
  }
  EXPECT_STREQ(AttemptAttributes::of("get", 200, "1.1", Code::kOk).method_name(),
               "_OTHER");  // methods are case-sensitive
  const AttemptAttributes timeout = AttemptAttributes::of("GET", 200, "2", Code::kTimeout);
  EXPECT_EQ(timeout.status, 0);  // no answer: no status and no protocol, whatever the transport left
  EXPECT_EQ(timeout.protocol_name(), nullptr);
  EXPECT_EQ(timeout.error_type(), "timeout");
  EXPECT_EQ(AttemptAttributes::of("GET", 204, "", Code::kOk).error_type(), "");
  EXPECT_EQ(AttemptAttributes::of("GET", 204, "", Code::kOk).protocol_name(), nullptr);
}

// ---- Log records (docs/telemetry.md §13.3) -------------------------------------------------------------------------

struct Recorded {
  std::string event, message, address, upstream;
  int port;
  breaker::State from, to;
  breaker::Counts counts;
  WallTime time;
};

TEST_F(MetricsTest, EachBreakerStateChangeIsOneLogRecordWithTheCountsAtTheChange) {
  std::mutex mu;
  std::vector<Recorded> logs;
  runtime_.telemetry().set_log_sink([&](const LogRecord& r) {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_TRUE(r.state_change);
    logs.push_back({std::string(r.event), std::string(r.message), std::string(r.server_address),
                    std::string(r.upstream), r.server_port, r.previous, r.next, r.counts, r.time});
  });
  settings::Settings s;
  s.max_attempts = 1;
  s.breaker.open_for = seconds(10);
  s.policy_params.successes_to_close = 2;
  auto c = make({reply(200), reply(503), reply(503), reply(503), reply(503), reply(503), reply(200)},
                "http://payments:8080", s);
  ASSERT_TRUE(c->execute(get()).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c->execute(get()).ok());
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs[0].event, "humus.circuit.state_change");
  EXPECT_EQ(logs[0].address, "payments");
  EXPECT_EQ(logs[0].port, 8080);
  EXPECT_EQ(logs[0].from, breaker::State::kClosed);
  EXPECT_EQ(logs[0].to, breaker::State::kOpen);
  EXPECT_EQ(logs[0].counts.successes, 1u);
  EXPECT_EQ(logs[0].counts.failures, 5u);
  EXPECT_EQ(logs[0].counts.consecutive_failures, 5u);
  EXPECT_EQ(logs[0].message,
            "circuit for http://payments:8080: closed -> open (successes 1, failures 5, "
            "consecutive failures 5)");
  EXPECT_EQ(logs[0].upstream, "");
  // Dated on the runtime clock's calendar.
  EXPECT_LE(logs[0].time, runtime_.clock().wall_now());

  const WallTime before = runtime_.clock().wall_now();
  runtime_.virtual_clock()->advance(seconds(10));
  ASSERT_TRUE(c->execute(get()).ok());  // half-open; the first probe succeeds
  ASSERT_TRUE(c->execute(get()).ok());  // the second closes
  ASSERT_EQ(logs.size(), 3u);
  EXPECT_EQ(logs[1].from, breaker::State::kOpen);
  EXPECT_EQ(logs[1].to, breaker::State::kHalfOpen);
  // Dated when open_for ran out (docs/breaker.md §9.2), not when a call noticed.
  EXPECT_EQ(logs[1].time, before + std::chrono::duration_cast<WallTime::duration>(seconds(10)));
  EXPECT_EQ(logs[2].from, breaker::State::kHalfOpen);
  EXPECT_EQ(logs[2].to, breaker::State::kClosed);
  EXPECT_EQ(logs[2].counts.successes, 2u);
  EXPECT_EQ(logs[2].counts.state, breaker::State::kHalfOpen);
  const OriginSeries o = only_origin();
  EXPECT_EQ(o.transitions, (std::array<uint64_t, kStates>{1, 1, 1}));
}

TEST_F(MetricsTest, NoSinkNoRecordAndAThrowingSinkBreaksNothing) {
  settings::Settings s;
  s.max_attempts = 1;
  auto c = make({reply(503)}, "http://payments:8080", s);
  int calls = 0;
  runtime_.telemetry().set_log_sink([&](const LogRecord&) {
    ++calls;
    throw std::runtime_error("sink failed");
  });
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c->execute(get()).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(c->breaker().state(), breaker::State::kOpen);
  EXPECT_EQ(only_origin().transitions[idx(breaker::State::kOpen)], 1u);
  runtime_.telemetry().set_log_sink(nullptr);
  runtime_.virtual_clock()->advance(seconds(10));
  EXPECT_EQ(c->breaker().state(), breaker::State::kHalfOpen);
  EXPECT_EQ(calls, 1);
}

TEST_F(MetricsTest, ASinkMayCollectMetricsFromInsideARecord) {
  settings::Settings s;
  s.max_attempts = 1;
  auto c = make({reply(503)}, "http://payments:8080", s);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c->execute(get()).ok());
  uint64_t seen_half_open = 0;
  runtime_.telemetry().set_log_sink([&](const LogRecord&) {
    seen_half_open =
        runtime_.telemetry().metrics().collect().origins.at(0).transitions[idx(breaker::State::kHalfOpen)];
  });
  runtime_.virtual_clock()->advance(seconds(10));
  // The collection's own read delivers open → half-open to the sink, which collects again on this thread.
  const OriginSeries o = only_origin();
  EXPECT_EQ(o.breakers[idx(breaker::State::kHalfOpen)], 1u);
  EXPECT_EQ(seen_half_open, 1u);
}

// ---- Expositions ---------------------------------------------------------------------------------------

TEST_F(MetricsTest, PrometheusTextParsesAndCarriesTheValues) {
  settings::Settings s;
  s.max_attempts = 2;
  auto c = make({reply(503, milliseconds(300)), reply(200, milliseconds(20))}, "http://payments:8080", s);
  ASSERT_TRUE(c->execute(get()).ok());
  const std::string text = to_prometheus(runtime_.telemetry().metrics().collect());
  const test::PromText p = test::parse_prometheus(text);
  EXPECT_EQ(p.types.at("http_client_request_duration_seconds"), "histogram");
  EXPECT_EQ(p.types.at("http_client_request_body_size_bytes"), "histogram");
  EXPECT_EQ(p.types.at("humus_circuit_state"), "gauge");
  EXPECT_EQ(p.types.at("humus_circuit_transitions_total"), "counter");
  EXPECT_EQ(p.types.at("humus_circuit_calls_total"), "counter");
  EXPECT_EQ(p.types.at("humus_retry_decisions_total"), "counter");
  const std::map<std::string, std::string> at = {{"server_address", "payments"}, {"server_port", "8080"}};
  auto with = [&](std::string k, std::string v) {
    auto m = at;
    m[k] = v;
    return m;
  };
  EXPECT_EQ(p.value("humus_circuit_state", with("humus_circuit_state", "closed")), 1);
  EXPECT_EQ(p.value("humus_circuit_state", with("humus_circuit_state", "open")), 0);
  EXPECT_EQ(p.value("humus_circuit_state", with("humus_circuit_state", "half_open")), 0);
  EXPECT_EQ(p.value("humus_circuit_calls_total", with("humus_circuit_outcome", "failure")), 1);
  EXPECT_EQ(p.value("humus_circuit_calls_total", with("humus_circuit_outcome", "success")), 1);
  EXPECT_EQ(p.value("humus_circuit_calls_total", with("humus_circuit_outcome", "rejected")), 0);
  EXPECT_EQ(p.value("humus_retry_decisions_total", with("humus_retry_decision", "again")), 1);
  EXPECT_EQ(p.value("humus_retry_decisions_total", with("humus_retry_decision", "done")), 1);
  EXPECT_EQ(p.value("humus_circuit_transitions_total", with("humus_circuit_state", "open")), 0);
  // One series per attribute set: the 503 took 0.3 s, the 200 0.02 s; buckets are cumulative.
  const std::map<std::string, std::string> ok = {{"server_address", "payments"},
                                                 {"server_port", "8080"},
                                                 {"http_request_method", "GET"},
                                                 {"http_response_status_code", "200"},
                                                 {"network_protocol_version", "1.1"}};
  auto failed = ok;
  failed["http_response_status_code"] = "503";
  failed["error_type"] = "503";
  auto le = [](std::map<std::string, std::string> labels, std::string bound) {
    labels["le"] = std::move(bound);
    return labels;
  };
  EXPECT_EQ(p.value("http_client_request_duration_seconds_bucket", le(ok, "0.01")), 0);
  EXPECT_EQ(p.value("http_client_request_duration_seconds_bucket", le(ok, "0.025")), 1);
  EXPECT_EQ(p.value("http_client_request_duration_seconds_bucket", le(ok, "+Inf")), 1);
  EXPECT_EQ(p.value("http_client_request_duration_seconds_bucket", le(failed, "0.25")), 0);
  EXPECT_EQ(p.value("http_client_request_duration_seconds_bucket", le(failed, "0.5")), 1);
  EXPECT_EQ(p.value("http_client_request_duration_seconds_count", failed), 1);
  EXPECT_NEAR(p.value("http_client_request_duration_seconds_sum", failed), 0.3, 1e-9);
  EXPECT_NEAR(p.value("http_client_request_duration_seconds_sum", ok), 0.02, 1e-9);
  for (const test::PromSample& sm : p.samples) {  // the 200 has no error.type at all
    if (sm.labels.count("http_response_status_code") && sm.labels.at("http_response_status_code") == "200") {
      EXPECT_EQ(sm.labels.count("error_type"), 0u) << sm.name;
    }
  }
  // Every bucket bound of OpenTelemetry's defaults, in order, never decreasing.
  std::vector<std::string> les;
  double last = 0;
  for (const test::PromSample& sm : p.samples) {
    if (sm.name != "http_client_request_body_size_bytes_bucket" ||
        sm.labels.at("http_response_status_code") != "200")
      continue;
    les.push_back(sm.labels.at("le"));
    EXPECT_GE(sm.value, last);
    last = sm.value;
  }
  EXPECT_EQ(les, (std::vector<std::string>{"0", "5", "10", "25", "50", "75", "100", "250", "500", "750",
                                           "1000", "2500", "5000", "7500", "10000", "+Inf"}));
  EXPECT_EQ(p.value("http_client_request_body_size_bytes_bucket", le(ok, "0")), 1);  // GETs: no body
  EXPECT_EQ(p.value("http_client_request_body_size_bytes_bucket", le(failed, "0")), 1);
  les.clear();
  for (const test::PromSample& sm : p.samples) {
    if (sm.name == "http_client_request_duration_seconds_bucket" &&
        sm.labels.at("http_response_status_code") == "200")
      les.push_back(sm.labels.at("le"));
  }
  EXPECT_EQ(les, (std::vector<std::string>{"0.005", "0.01", "0.025", "0.05", "0.075", "0.1", "0.25", "0.5",
                                           "0.75", "1", "2.5", "5", "7.5", "10", "+Inf"}));
}

TEST(ExpositionTest, LabelValuesAreEscaped) {
  Snapshot snap;
  OriginSeries& s = snap.origins.emplace_back();
  s.address = "a\"b\\c\nd";
  s.port = 1;
  s.calls[0] = 7;
  const std::string text = to_prometheus(snap);
  EXPECT_NE(text.find(R"(server_address="a\"b\\c\nd")"), std::string::npos);
  const test::PromText p = test::parse_prometheus(text);
  EXPECT_EQ(p.value("humus_circuit_calls_total",
                    {{"server_address", "a\"b\\c\nd"}, {"humus_circuit_outcome", "success"}}),
            7);
}

TEST(ExpositionTest, NoClientMeansFamiliesWithoutSamples) {
  const test::PromText p = test::parse_prometheus(to_prometheus(Snapshot{}));
  EXPECT_EQ(p.types.size(), 7u);  // humus.bulkhead.limit the seventh
  EXPECT_TRUE(p.samples.empty());
}

TEST_F(MetricsTest, JsonCarriesTheSameValues) {
  auto c = make({reply(503, milliseconds(300)), reply(200, milliseconds(20))});
  ASSERT_TRUE(c->execute(get()).ok());
  const nlohmann::json j = nlohmann::json::parse(to_json(runtime_.telemetry().metrics().collect()));
  ASSERT_EQ(j["metrics"].size(), 7u);
  const nlohmann::json& d = j["metrics"][0];
  EXPECT_EQ(d["name"], "http.client.request.duration");
  EXPECT_EQ(d["unit"], "s");
  EXPECT_EQ(d["type"], "histogram");
  EXPECT_EQ(d["bounds"],
            (nlohmann::json{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}));
  ASSERT_EQ(d["points"].size(), 2u);  // by key: the 200 before the 503
  EXPECT_EQ(d["points"][0]["attributes"], (nlohmann::json{{"server.address", "payments"},
                                                          {"server.port", 8080},
                                                          {"http.request.method", "GET"},
                                                          {"http.response.status_code", 200},
                                                          {"network.protocol.version", "1.1"}}));
  EXPECT_EQ(d["points"][1]["attributes"]["http.response.status_code"], 503);
  EXPECT_EQ(d["points"][1]["attributes"]["error.type"], "503");
  EXPECT_EQ(d["points"][0]["count"], 1);
  EXPECT_EQ(d["points"][0]["bucket_counts"].size(), 15u);
  EXPECT_EQ(d["points"][0]["bucket_counts"][2], 1);  // (0.01, 0.025]
  EXPECT_EQ(d["points"][1]["bucket_counts"][7], 1);  // (0.25, 0.5]
  const nlohmann::json& decisions = j["metrics"][5];
  EXPECT_EQ(decisions["name"], "humus.retry.decisions");
  int again = -1;
  for (const auto& point : decisions["points"]) {
    if (point["attributes"]["humus.retry.decision"] == "again") again = point["value"];
  }
  EXPECT_EQ(again, 1);
  const nlohmann::json& state = j["metrics"][2];
  EXPECT_EQ(state["name"], "humus.circuit.state");
  EXPECT_EQ(state["type"], "gauge");
  EXPECT_EQ(state["points"].size(), 3u);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::telemetry
