// docs/telemetry.md §13 and docs/failure-injection.md §14 against the real local server (tests/server/): a call retried through a 503 and a call
// rejected by an open breaker, checked in what the server received (the traceparent of each attempt), the
// spans, the Prometheus text and the log records; and a fault scenario that fails the attempts it names and
// never reaches the server.
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "client/client.h"
#include "support/test_server.h"
#include "telemetry/exposition.h"
#include "telemetry/prometheus_parser.h"

namespace humus::telemetry {
namespace {
namespace HUMUS_UNITY_ID {

using client::Client;
using client::Request;
using client::Runtime;
using nlohmann::json;

class TelemetryServerTest : public humus::test::WithTestServer {
 protected:
  TelemetryServerTest()
      : runtime_([] {
          client::RuntimeOptions o;
          o.faults = true;
          o.resolve.emplace_back(server().host_port("https"), server().address("https"));  // the TLS name
          return o;
        }()) {
    runtime_.telemetry().set_log_sink([this](const LogRecord& r) {
      std::lock_guard<std::mutex> lock(mu_);
      logs_.push_back({r.previous, r.next, r.counts, std::string(r.server_address), r.server_port});
    });
    runtime_.telemetry().set_span_sink([this](const Span& span) {
      std::lock_guard<std::mutex> lock(mu_);
      spans_.push_back(span);
    });
  }

  // The value of `name` among the headers the server recorded for a request ("" when absent).
  static std::string received_header(const json& request, std::string_view name) {
    for (const json& h : request.at("headers")) {
      if (equals_ignore_case(h[0].get<std::string>(), name)) return h[1].get<std::string>();
    }
    return "";
  }

  std::unique_ptr<Client> make(settings::Settings s) {
    s.base_url = "http://" + server().address("http");
    s.backoff_base = std::chrono::milliseconds(5);
    s.backoff_max = std::chrono::milliseconds(10);
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }

  test::PromText prometheus() {
    return test::parse_prometheus(to_prometheus(runtime_.telemetry().metrics().collect()));
  }

  std::map<std::string, std::string> labels(std::string key = "", std::string value = "") {
    const std::string address = server().address("http");
    std::map<std::string, std::string> m = {{"server_address", address.substr(0, address.rfind(':'))},
                                            {"server_port", std::to_string(server().port("http"))}};
    if (!key.empty()) m[key] = value;
    return m;
  }

  struct Log {
    breaker::State from, to;
    breaker::Counts counts;
    std::string address;
    int port;
  };
  Runtime runtime_;
  std::mutex mu_;
  std::vector<Log> logs_;
  std::vector<Span> spans_;
};

constexpr char kCallerTrace[] = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr char kCallerSpan[] = "00f067aa0ba902b7";

TEST_F(TelemetryServerTest, ARetryThroughA503IsTwoAttemptsInTheMetrics) {
  server().script("/pay", json::parse(R"([{"status": 503}, {"status": 200, "body": "ok"}])"), false);
  auto c = make({});
  Request r;
  r.url = server().url("http", "/pay");
  r.context.traceparent = std::string("00-") + kCallerTrace + "-" + kCallerSpan + "-01";
  r.context.tracestate = "vendor=1";
  client::CallResult out = c->execute(r);
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->status, 200);
  const std::vector<json> received = server().requests("/pay");
  ASSERT_EQ(received.size(), 2u);

  {
    std::lock_guard<std::mutex> lock(mu_);
    ASSERT_EQ(spans_.size(), 2u);  // one per attempt
    for (size_t i = 0; i < 2; ++i) {
      const Span& span = spans_[i];
      EXPECT_EQ(span.name, "GET");
      EXPECT_EQ(to_hex(span.trace_id), kCallerTrace);  // the caller's trace
      ASSERT_TRUE(span.parent_span_id.has_value());
      EXPECT_EQ(to_hex(*span.parent_span_id), kCallerSpan);  // children of the caller's span
      EXPECT_EQ(span.resend_count, static_cast<int>(i));
      EXPECT_EQ(span.url_full, r.url);
      EXPECT_EQ(span.server_port, server().port("http"));
      EXPECT_EQ(span.protocol_version, "1.1");
      EXPECT_LE(span.start, span.end);
      // The server saw exactly this span as the parent of its work, and the caller's tracestate.
      EXPECT_EQ(received_header(received[i], "traceparent"),
                std::string("00-") + kCallerTrace + "-" + to_hex(span.span_id) + "-01");
      EXPECT_EQ(received_header(received[i], "tracestate"), "vendor=1");
    }
    EXPECT_NE(spans_[0].span_id, spans_[1].span_id);
    EXPECT_EQ(spans_[0].status_code, 503);
    EXPECT_TRUE(spans_[0].error);
    EXPECT_EQ(spans_[0].error_type, "503");
    EXPECT_EQ(spans_[1].status_code, 200);
    EXPECT_FALSE(spans_[1].error);
    EXPECT_EQ(spans_[1].error_type, "");
    EXPECT_LE(spans_[0].end, spans_[1].start);  // the backoff lies between them
  }

  const test::PromText p = prometheus();
  // One duration series per attribute set of the semantic conventions: the 503, then the 200.
  for (const std::string status : {"503", "200"}) {
    auto series = labels("http_response_status_code", status);
    series["http_request_method"] = "GET";
    series["network_protocol_version"] = "1.1";
    if (status == "503") series["error_type"] = "503";
    EXPECT_EQ(p.value("http_client_request_duration_seconds_count", series), 1) << status;
    EXPECT_GT(p.value("http_client_request_duration_seconds_sum", series), 0) << status;
    series["le"] = "+Inf";
    EXPECT_EQ(p.value("http_client_request_duration_seconds_bucket", series), 1) << status;
  }
  EXPECT_EQ(p.value("humus_circuit_calls_total", labels("humus_circuit_outcome", "failure")), 1);
  EXPECT_EQ(p.value("humus_circuit_calls_total", labels("humus_circuit_outcome", "success")), 1);
  EXPECT_EQ(p.value("humus_retry_decisions_total", labels("humus_retry_decision", "again")), 1);
  EXPECT_EQ(p.value("humus_retry_decisions_total", labels("humus_retry_decision", "done")), 1);
  EXPECT_EQ(p.value("humus_circuit_state", labels("humus_circuit_state", "closed")), 1);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_TRUE(logs_.empty());  // no state change, no record
}

TEST_F(TelemetryServerTest, OverHttp2TheDurationSeriesSayProtocolVersion2) {
  server().script("/h2", json::parse(R"([{"status": 201, "body": "made"}])"));
  settings::Settings s;
  s.base_url = "https://" + server().host_port("https");
  s.tls.emplace();
  s.tls->ca_file = server().ca_file();
  Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
  ASSERT_TRUE(c.ok()) << c.status().message();
  Request r;
  r.method = "POST";
  r.url = server().url("https", "/h2");
  r.body = std::make_shared<const std::string>("order");
  client::CallResult out = c.value()->execute(r);
  ASSERT_TRUE(out.ok()) << out.error.message();
  ASSERT_EQ(out.response->http_version, "2");
  const test::PromText p = prometheus();
  const std::string host_port = server().host_port("https");
  const std::map<std::string, std::string> series = {
      {"server_address", host_port.substr(0, host_port.rfind(':'))},
      {"server_port", std::to_string(server().port("https"))},
      {"http_request_method", "POST"},
      {"http_response_status_code", "201"},
      {"network_protocol_version", "2"}};
  EXPECT_EQ(p.value("http_client_request_duration_seconds_count", series), 1);
  EXPECT_EQ(p.value("http_client_request_body_size_bytes_sum", series), 5);  // "order"
}

TEST_F(TelemetryServerTest, ACallRejectedByAnOpenBreakerSendsNothingAndIsCounted) {
  server().script("/down", json::parse(R"([{"status": 503}])"));
  settings::Settings s;
  s.max_attempts = 1;
  s.policy_params.consecutive_failures = 2;
  auto c = make(s);
  Request r;
  r.url = server().url("http", "/down");
  ASSERT_TRUE(c->execute(r).ok());
  ASSERT_TRUE(c->execute(r).ok());
  client::CallResult rejected = c->execute(r);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error.code(), Code::kRejected);
  EXPECT_EQ(server().requests("/down").size(), 2u);  // the rejected call sent nothing
  {
    std::lock_guard<std::mutex> lock(mu_);
    ASSERT_EQ(spans_.size(), 3u);
    const Span& last = spans_[2];
    EXPECT_EQ(last.error_type, "rejected");
    EXPECT_TRUE(last.error);
    EXPECT_EQ(last.start, last.end);  // ends as it starts
    EXPECT_EQ(last.status_code, 0);
    EXPECT_EQ(last.resend_count, 0);  // the call's first attempt
    EXPECT_FALSE(last.parent_span_id.has_value());  // no caller context: a root span of a new trace
    EXPECT_NE(last.trace_id, spans_[0].trace_id);   // each call its own trace
  }

  const test::PromText p = prometheus();
  EXPECT_EQ(p.value("humus_circuit_calls_total", labels("humus_circuit_outcome", "failure")), 2);
  EXPECT_EQ(p.value("humus_circuit_calls_total", labels("humus_circuit_outcome", "rejected")), 1);
  EXPECT_EQ(p.value("humus_retry_decisions_total", labels("humus_retry_decision", "exhausted")), 2);
  EXPECT_EQ(p.value("humus_retry_decisions_total", labels("humus_retry_decision", "stopped")), 1);
  EXPECT_EQ(p.value("humus_circuit_transitions_total", labels("humus_circuit_state", "open")), 1);
  EXPECT_EQ(p.value("humus_circuit_state", labels("humus_circuit_state", "open")), 1);
  EXPECT_EQ(p.value("http_client_request_duration_seconds_count", labels()), 2);

  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(logs_.size(), 1u);
  EXPECT_EQ(logs_[0].from, breaker::State::kClosed);
  EXPECT_EQ(logs_[0].to, breaker::State::kOpen);
  EXPECT_EQ(logs_[0].counts.consecutive_failures, 2u);
  EXPECT_EQ(logs_[0].counts.failures, 2u);
  EXPECT_EQ(logs_[0].address, labels()["server_address"]);
  EXPECT_EQ(logs_[0].port, server().port("http"));
}

TEST_F(TelemetryServerTest, AFaultScenarioFailsTheAttemptsItNamesAndNeverReachesTheServer) {
  auto c = make({});
  const std::string point = "http:" + labels()["server_address"] + ":" + std::to_string(server().port("http"));
  Request r;
  r.url = server().url("http", "/faulty");
  // A certain 503 for this client's point (and an abort for another point, which this call ignores).
  r.context.baggage = "tenant=acme,humus.fault=" + point + "=status:503|http:ledger:8443=abort";
  client::CallResult out = c->execute(r);
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->status, 503);  // synthetic, classified like a real 503: retried to the limit
  EXPECT_EQ(out.attempts, 3);
  EXPECT_TRUE(server().requests("/faulty").empty());  // nothing reached the server

  // The same scenario naming another point: the call goes through, and the server never sees the member.
  Request other;
  other.url = server().url("http", "/faulty");
  other.context.baggage = "tenant=acme,humus.fault=http:ledger:8443=abort";
  ASSERT_TRUE(c->execute(other).ok());
  const std::vector<json> received = server().requests("/faulty");
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received_header(received[0], "baggage"), "tenant=acme");

  const test::PromText p = prometheus();
  EXPECT_EQ(p.value("humus_circuit_calls_total", labels("humus_circuit_outcome", "failure")), 3);
  EXPECT_EQ(p.value("humus_retry_decisions_total", labels("humus_retry_decision", "again")), 2);
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(spans_.size(), 4u);
  EXPECT_EQ(spans_[0].status_code, 503);
  EXPECT_EQ(spans_[2].resend_count, 2);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::telemetry
