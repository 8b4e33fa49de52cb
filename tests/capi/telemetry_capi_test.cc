// The log sink, metrics and readiness sections of include/humus_http.h through the C ABI alone, on the
// virtual clock and the mock transport.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "humus_http.h"
#include "support/capi_client.h"

namespace {
namespace HUMUS_UNITY_ID {

humus_status always_503(void*, const humus_mock_request*, humus_mock_reply* reply) {
  humus_mock_reply_set_status(reply, 503);
  return HUMUS_OK;
}

struct Logs {
  std::vector<std::string> events, addresses, upstreams;
  std::vector<int32_t> ports, from, to;
  std::vector<humus_breaker_counts> counts;
  int destroyed = 0;
};

void on_record(void* user, const humus_log_record* r) {
  auto* logs = static_cast<Logs*>(user);
  EXPECT_EQ(r->version, static_cast<uint32_t>(HUMUS_LOG_RECORD_VERSION));
  logs->events.emplace_back(r->event);
  logs->addresses.emplace_back(r->server_address);
  logs->upstreams.emplace_back(r->upstream);
  logs->ports.push_back(r->server_port);
  logs->from.push_back(r->previous_state);
  logs->to.push_back(r->new_state);
  logs->counts.push_back(*r->counts);
  EXPECT_GT(r->time_unix_ms, 1'600'000'000'000);
  EXPECT_NE(std::strstr(r->message, "closed -> open"), nullptr);
}

void on_destroy(void* user) { ++static_cast<Logs*>(user)->destroyed; }

class CapiTelemetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* options = R"({"clock": "virtual", "seed": 1})";
    ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt_, nullptr), HUMUS_OK);
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = always_503;
    ASSERT_EQ(humus_runtime_set_mock_transport(rt_, &mock, nullptr), HUMUS_OK);
    client_ = humus::testing::new_capi_client(rt_, R"({"base_url": "http://payments:8080", "max_attempts": 1})");
    ASSERT_NE(client_, nullptr);
    ASSERT_EQ(humus_request_new("GET", "http://payments:8080/pay", &req_, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    humus_request_free(req_);
    humus_client_free(client_);
    humus_runtime_free(rt_);
  }
  void call() {
    humus_response* resp = nullptr;
    const humus_status st = humus_client_do(client_, req_, &resp, nullptr);
    humus_response_free(resp);
    last_ = st;
  }
  std::string take(humus_status (*fn)(humus_runtime*, char**, size_t*, humus_error**)) {
    char* out = nullptr;
    size_t len = 0;
    EXPECT_EQ(fn(rt_, &out, &len, nullptr), HUMUS_OK);
    std::string s(out, len);
    EXPECT_EQ(std::strlen(out), len);
    humus_string_free(out);
    return s;
  }

  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
  humus_request* req_ = nullptr;
  humus_status last_ = HUMUS_OK;
};

TEST_F(CapiTelemetryTest, LogSinkGetsTheStateChangeAndIsDestroyedOnce) {
  Logs logs;
  humus_log_sink sink = HUMUS_LOG_SINK_INIT;
  sink.record = on_record;
  sink.user_data = &logs;
  sink.destroy = on_destroy;
  ASSERT_EQ(humus_runtime_set_log_sink(rt_, &sink, nullptr), HUMUS_OK);
  for (int i = 0; i < 5; ++i) call();
  ASSERT_EQ(logs.events.size(), 1u);
  EXPECT_EQ(logs.events[0], "humus.circuit.state_change");
  EXPECT_EQ(logs.addresses[0], "payments");
  EXPECT_EQ(logs.upstreams[0], "");
  EXPECT_EQ(logs.ports[0], 8080);
  EXPECT_EQ(logs.from[0], HUMUS_CIRCUIT_CLOSED);
  EXPECT_EQ(logs.to[0], HUMUS_CIRCUIT_OPEN);
  EXPECT_EQ(logs.counts[0].consecutive_failures, 5u);
  EXPECT_EQ(logs.counts[0].state, HUMUS_CIRCUIT_CLOSED);
  EXPECT_EQ(logs.destroyed, 0);
  ASSERT_EQ(humus_runtime_set_log_sink(rt_, nullptr, nullptr), HUMUS_OK);  // removed: destroyed now
  EXPECT_EQ(logs.destroyed, 1);
}

TEST_F(CapiTelemetryTest, TheRuntimeReleasesItsSinkWhenFreed) {
  Logs logs;
  humus_log_sink sink = HUMUS_LOG_SINK_INIT;
  sink.record = on_record;
  sink.user_data = &logs;
  sink.destroy = on_destroy;
  ASSERT_EQ(humus_runtime_set_log_sink(rt_, &sink, nullptr), HUMUS_OK);
  humus_request_free(req_);
  humus_client_free(client_);
  humus_runtime_free(rt_);
  req_ = nullptr;
  client_ = nullptr;
  rt_ = nullptr;
  EXPECT_EQ(logs.destroyed, 1);
}

TEST_F(CapiTelemetryTest, LogSinkTablesAreChecked) {
  Logs logs;
  humus_log_sink sink = HUMUS_LOG_SINK_INIT;
  sink.user_data = &logs;
  sink.destroy = on_destroy;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_runtime_set_log_sink(rt_, &sink, &err), HUMUS_E_PROGRAM);  // no record callback
  humus_error_free(err);
  sink.record = on_record;
  sink.version = 99;
  EXPECT_EQ(humus_runtime_set_log_sink(rt_, &sink, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_runtime_set_log_sink(nullptr, &sink, nullptr), HUMUS_E_MISUSE);  // NULL is no handle
  EXPECT_EQ(logs.destroyed, 0);  // refused tables stay the caller's
}

TEST_F(CapiTelemetryTest, PrometheusJsonAndReadinessAfterTheBreakerOpens) {
  for (int i = 0; i < 6; ++i) call();
  EXPECT_EQ(last_, HUMUS_E_REJECTED);
  const std::string prom = take(humus_runtime_metrics_prometheus);
  EXPECT_NE(prom.find("humus_circuit_state{server_address=\"payments\",server_port=\"8080\","
                      "humus_circuit_state=\"open\"} 1\n"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("humus_circuit_calls_total{server_address=\"payments\",server_port=\"8080\","
                      "humus_circuit_outcome=\"rejected\"} 1\n"),
            std::string::npos);
  const nlohmann::json metrics = nlohmann::json::parse(take(humus_runtime_metrics_json));
  EXPECT_EQ(metrics["metrics"][3]["name"], "humus.circuit.transitions");

  const nlohmann::json ready = nlohmann::json::parse(take(humus_runtime_readiness_json));
  EXPECT_EQ(ready["status"], "degraded");
  ASSERT_EQ(ready["clients"].size(), 1u);
  EXPECT_EQ(ready["clients"][0]["origin"], "http://payments:8080");
  EXPECT_EQ(ready["clients"][0]["state"], "open");
  EXPECT_EQ(ready["clients"][0]["retry_after_ms"], 10000);
  EXPECT_EQ(ready["clients"][0]["counts"]["failures"], 0);  // the open state's own counts
  EXPECT_FALSE(ready["clients"][0].contains("name"));

  ASSERT_EQ(humus_runtime_advance_ms(rt_, 10'000, nullptr), HUMUS_OK);
  const nlohmann::json later = nlohmann::json::parse(take(humus_runtime_readiness_json));
  EXPECT_EQ(later["clients"][0]["state"], "half_open");
  EXPECT_EQ(later["clients"][0]["retry_after_ms"], 0);
  EXPECT_EQ(later["status"], "degraded");  // never "unavailable"
}

TEST_F(CapiTelemetryTest, ReadinessIsOkWhileEveryBreakerIsClosed) {
  const nlohmann::json ready = nlohmann::json::parse(take(humus_runtime_readiness_json));
  EXPECT_EQ(ready["status"], "ok");
  EXPECT_EQ(ready["clients"][0]["state"], "closed");
  EXPECT_EQ(ready["clients"][0]["counts"]["window_results"], 0);
  call();
  const nlohmann::json after = nlohmann::json::parse(take(humus_runtime_readiness_json));
  EXPECT_EQ(after["status"], "ok");
  EXPECT_EQ(after["clients"][0]["counts"]["failures"], 1);
}

struct Points {
  std::vector<std::string> seen;
  int stop_after = -1;
};

humus_status collect_point(void* user, const humus_metric_point* p) {
  auto* points = static_cast<Points*>(user);
  std::string line =
      std::string(p->name) + " " + p->unit + " " + p->server_address + ":" + std::to_string(p->server_port);
  EXPECT_EQ(p->version, HUMUS_METRIC_POINT_VERSION);
  std::string attributes;  // version 2: every attribute besides the origin's
  for (size_t i = 0; i < p->attribute_count; ++i) {
    attributes += std::string(" ") + p->attribute_names[i] + "=" + p->attribute_values[i];
  }
  if (p->kind == HUMUS_METRIC_HISTOGRAM) {
    EXPECT_EQ(p->attribute_name, nullptr);
    line += attributes;
    // Durations have OpenTelemetry's advised bounds (no 0), body sizes the SDK's default ones (0 first).
    EXPECT_EQ(p->bound_count, std::string(p->unit) == "s" ? 14u : 15u);
    EXPECT_EQ(p->bounds[0], std::string(p->unit) == "s" ? 0.005 : 0.0);
    uint64_t total = 0;
    for (size_t i = 0; i <= p->bound_count; ++i) total += p->bucket_counts[i];
    EXPECT_EQ(total, p->count);
    line += " count=" + std::to_string(p->count) + " le" + std::to_string(p->bounds[p->bound_count - 1]);
  } else {
    EXPECT_EQ(attributes, std::string(" ") + p->attribute_name + "=" + p->attribute_value);
    line += std::string(" ") + p->attribute_name + "=" + p->attribute_value + " " + std::to_string(p->value);
  }
  points->seen.push_back(line);
  if (points->stop_after >= 0 && static_cast<int>(points->seen.size()) >= points->stop_after)
    return HUMUS_E_CALLBACK;
  return HUMUS_OK;
}

TEST_F(CapiTelemetryTest, MetricSinkReceivesEveryPoint) {
  call();
  Points points;
  ASSERT_EQ(humus_runtime_metrics_collect(rt_, collect_point, &points, nullptr), HUMUS_OK);
  // 2 histograms + 3 states + 3 transitions + 4 outcomes + 6 decisions + 2 bulkhead modes.
  ASSERT_EQ(points.seen.size(), 20u);
  // The mock answers 503 over HTTP/1.1; the call is a GET.
  EXPECT_EQ(
      points.seen[0],
      "http.client.request.duration s payments:8080 http.request.method=GET http.response.status_code=503 "
      "error.type=503 network.protocol.version=1.1 count=1 le10.000000");
  EXPECT_EQ(
      points.seen[1],
      "http.client.request.body.size By payments:8080 http.request.method=GET http.response.status_code=503 "
      "error.type=503 network.protocol.version=1.1 count=1 le10000.000000");
  EXPECT_EQ(points.seen[2], "humus.circuit.state {breaker} payments:8080 humus.circuit.state=closed 1");
  EXPECT_EQ(points.seen[9], "humus.circuit.calls {call} payments:8080 humus.circuit.outcome=failure 1");
  EXPECT_EQ(points.seen[17], "humus.retry.decisions {decision} payments:8080 humus.retry.decision=stopped 0");
  EXPECT_EQ(points.seen[15],
            "humus.retry.decisions {decision} payments:8080 humus.retry.decision=exhausted 1");
  EXPECT_EQ(points.seen[18], "humus.bulkhead.limit {call} payments:8080 humus.bulkhead.mode=fixed 50");
  EXPECT_EQ(points.seen[19], "humus.bulkhead.limit {call} payments:8080 humus.bulkhead.mode=adaptive 0");

  Points stopping;
  stopping.stop_after = 3;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_runtime_metrics_collect(rt_, collect_point, &stopping, &err), HUMUS_E_CALLBACK);
  EXPECT_EQ(stopping.seen.size(), 3u);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(humus_error_message(err)).find("humus.circuit.state"), std::string::npos);
  humus_error_free(err);
  EXPECT_EQ(humus_runtime_metrics_collect(rt_, nullptr, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  char* out = nullptr;
  EXPECT_EQ(humus_runtime_metrics_prometheus(rt_, nullptr, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_runtime_metrics_json(nullptr, &out, nullptr, nullptr), HUMUS_E_MISUSE);  // NULL is no handle
  EXPECT_EQ(humus_runtime_readiness_json(nullptr, &out, nullptr, nullptr), HUMUS_E_MISUSE);  // NULL is no handle
}

struct Spans {
  std::vector<nlohmann::json> seen;  // each span as JSON, attributes by key
  int destroyed = 0;
};

void on_span(void* user, const humus_span* span) {
  EXPECT_EQ(span->version, static_cast<uint32_t>(HUMUS_SPAN_VERSION));
  nlohmann::json j = {{"name", span->name}, {"trace_id", span->trace_id}, {"span_id", span->span_id},
                      {"parent", span->parent_span_id}, {"tracestate", span->tracestate},
                      {"flags", span->trace_flags}, {"status", span->status},
                      {"duration_ns", span->end_unix_ns - span->start_unix_ns}};
  EXPECT_GT(span->start_unix_ns, 1'600'000'000'000'000'000);
  for (size_t i = 0; i < span->attribute_count; ++i) {
    const humus_span_attribute& a = span->attributes[i];
    if (a.type == HUMUS_ATTRIBUTE_STRING) {
      j["attributes"][a.key] = a.string_value;
    } else {
      EXPECT_EQ(a.type, HUMUS_ATTRIBUTE_INT);
      j["attributes"][a.key] = a.int_value;
    }
  }
  static_cast<Spans*>(user)->seen.push_back(std::move(j));
}

void on_spans_destroyed(void* user) { ++static_cast<Spans*>(user)->destroyed; }

TEST_F(CapiTelemetryTest, SpanSinkGetsEachAttemptWithItsAttributes) {
  Spans spans;
  humus_span_sink sink = HUMUS_SPAN_SINK_INIT;
  sink.span = on_span;
  sink.user_data = &spans;
  sink.destroy = on_spans_destroyed;
  ASSERT_EQ(humus_runtime_set_span_sink(rt_, &sink, nullptr), HUMUS_OK);
  ASSERT_EQ(humus_request_set_context(req_, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "v=1",
                                      nullptr, nullptr, nullptr, nullptr),
            HUMUS_OK);
  call();  // one attempt, answered 503
  ASSERT_EQ(spans.seen.size(), 1u);
  const nlohmann::json& s = spans.seen[0];
  EXPECT_EQ(s["name"], "GET");
  EXPECT_EQ(s["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(s["parent"], "00f067aa0ba902b7");
  EXPECT_EQ(s["span_id"].get<std::string>().size(), 16u);
  EXPECT_EQ(s["tracestate"], "v=1");
  EXPECT_EQ(s["flags"], 1);
  EXPECT_EQ(s["status"], HUMUS_SPAN_STATUS_ERROR);
  EXPECT_EQ(s["attributes"], nlohmann::json::parse(R"({"url.full": "http://payments:8080/pay",
      "server.address": "payments", "server.port": 8080, "http.request.method": "GET",
      "http.response.status_code": 503, "network.protocol.version": "1.1", "error.type": "503"})"));

  ASSERT_EQ(humus_runtime_set_span_sink(rt_, nullptr, nullptr), HUMUS_OK);
  EXPECT_EQ(spans.destroyed, 1);
  call();
  EXPECT_EQ(spans.seen.size(), 1u);  // removed: no more spans
}

TEST_F(CapiTelemetryTest, SpanSinkTablesAreChecked) {
  humus_span_sink sink = HUMUS_SPAN_SINK_INIT;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_runtime_set_span_sink(rt_, &sink, &err), HUMUS_E_PROGRAM);
  EXPECT_STREQ(humus_error_field(err, 0), "span");
  humus_error_free(err);
  sink.span = on_span;
  sink.version = 99;
  EXPECT_EQ(humus_runtime_set_span_sink(rt_, &sink, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_runtime_set_span_sink(nullptr, nullptr, nullptr), HUMUS_E_MISUSE);  // NULL is no handle
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
