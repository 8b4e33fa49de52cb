// SPEC §13.2/§13.3 against the real local server (tests/server/): a call retried through a 503 and a call
// rejected by an open breaker, checked in what the server received, the Prometheus text and the log records.
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "client/client.h"
#include "support/test_server.h"
#include "telemetry/exposition.h"
#include "telemetry/prometheus_parser.h"

namespace humus::telemetry {
namespace {

using client::Client;
using client::Request;
using client::Runtime;
using nlohmann::json;

class TelemetryServerTest : public humus::test::WithTestServer {
 protected:
  TelemetryServerTest() : runtime_(client::RuntimeOptions{}) {
    runtime_.telemetry().set_log_sink([this](const LogRecord& r) {
      std::lock_guard<std::mutex> lock(mu_);
      logs_.push_back({r.previous, r.next, r.counts, std::string(r.server_address), r.server_port});
    });
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
};

TEST_F(TelemetryServerTest, ARetryThroughA503IsTwoAttemptsInTheMetrics) {
  server().script("/pay", json::parse(R"([{"status": 503}, {"status": 200, "body": "ok"}])"), false);
  auto c = make({});
  Request r;
  r.url = server().url("http", "/pay");
  client::CallResult out = c->execute(r);
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->status, 200);
  EXPECT_EQ(server().requests("/pay").size(), 2u);

  const test::PromText p = prometheus();
  EXPECT_EQ(p.value("http_client_request_duration_seconds_count", labels()), 2);
  EXPECT_GT(p.value("http_client_request_duration_seconds_sum", labels()), 0);
  EXPECT_EQ(p.value("http_client_request_duration_seconds_bucket", labels("le", "+Inf")), 2);
  EXPECT_EQ(p.value("humus_circuit_calls_total", labels("humus_circuit_outcome", "failure")), 1);
  EXPECT_EQ(p.value("humus_circuit_calls_total", labels("humus_circuit_outcome", "success")), 1);
  EXPECT_EQ(p.value("humus_retry_decisions_total", labels("humus_retry_decision", "again")), 1);
  EXPECT_EQ(p.value("humus_retry_decisions_total", labels("humus_retry_decision", "done")), 1);
  EXPECT_EQ(p.value("humus_circuit_state", labels("humus_circuit_state", "closed")), 1);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_TRUE(logs_.empty());  // no state change, no record
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

}  // namespace
}  // namespace humus::telemetry
