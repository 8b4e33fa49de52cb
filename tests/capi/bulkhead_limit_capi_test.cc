// The adaptive bulkhead's limit through the C ABI alone (docs/bulkhead.md §11.1): humus_client_bulkhead_limit,
// the readiness report's bulkhead_limit and the humus.bulkhead.limit gauge, and which calls move it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

using nlohmann::json;

// /ok: 200 after 10 ms; /busy: 503 after 10 ms; anything else: 200 at once.
humus_status respond(void*, const humus_mock_request* req, humus_mock_reply* reply) {
  const std::string url = humus_mock_request_url(req);
  const std::string path = url.substr(url.find('/', std::strlen("http://")));
  humus_mock_reply_set_status(reply, path == "/busy" ? 503 : 200);
  if (path == "/ok" || path == "/busy") humus_mock_reply_set_delay_ms(reply, 10);
  return HUMUS_OK;
}

class BulkheadLimitCapiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* options = R"({"clock": "virtual", "seed": 1})";
    ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt_, nullptr), HUMUS_OK);
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = respond;
    ASSERT_EQ(humus_runtime_set_mock_transport(rt_, &mock, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    humus_client_free(client_);
    humus_runtime_free(rt_);
  }

  void make_client(const char* json_text) {
    humus_settings* s = nullptr;
    ASSERT_EQ(humus_settings_from_json(json_text, std::strlen(json_text), &s, nullptr), HUMUS_OK);
    ASSERT_EQ(humus_client_new(rt_, s, &client_, nullptr), HUMUS_OK);
    humus_settings_free(s);
  }

  uint32_t limit() {
    uint32_t n = 0;
    EXPECT_EQ(humus_client_bulkhead_limit(client_, &n), HUMUS_OK);
    return n;
  }

  // A blocking GET of `path`; its status (HUMUS_OK or the error's).
  humus_status get(const char* path, humus_cancel* cancel = nullptr) {
    humus_request* req = nullptr;
    const std::string url = std::string("http://payments:8080") + path;
    EXPECT_EQ(humus_request_new("GET", url.c_str(), &req, nullptr), HUMUS_OK);
    if (cancel != nullptr) {
      EXPECT_EQ(humus_request_set_cancel(req, cancel), HUMUS_OK);
    }
    humus_response* resp = nullptr;
    humus_error* err = nullptr;
    const humus_status st = humus_client_do(client_, req, &resp, &err);
    humus_response_free(resp);
    humus_error_free(err);
    humus_request_free(req);
    return st;
  }

  static std::string take(char* text, size_t len) {
    std::string out(text, len);
    humus_string_free(text);
    return out;
  }

  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
};

// F176
TEST_F(BulkheadLimitCapiTest, LimitIsReadThroughTheGetterReadinessAndTheGauge) {
  make_client(R"({"base_url": "http://payments:8080", "max_attempts": 1,
                  "bulkhead": {"mode": "adaptive", "algorithm": "aimd", "max_concurrent": 1, "min": 1, "max": 5}})");
  EXPECT_EQ(limit(), 1u);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(get("/ok"), HUMUS_OK);  // two windows of 10: 1 · 2 >= 1, then >= 2
  EXPECT_EQ(limit(), 3u);

  char* text = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_runtime_readiness_json(rt_, &text, &len, nullptr), HUMUS_OK);
  const json ready = json::parse(take(text, len));
  ASSERT_EQ(ready["clients"].size(), 1u);
  EXPECT_EQ(ready["clients"][0]["bulkhead_limit"], 3);

  ASSERT_EQ(humus_runtime_metrics_prometheus(rt_, &text, &len, nullptr), HUMUS_OK);
  const std::string prometheus = take(text, len);
  EXPECT_NE(prometheus.find("# TYPE humus_bulkhead_limit gauge\n"), std::string::npos) << prometheus;
  EXPECT_NE(prometheus.find("humus_bulkhead_limit{server_address=\"payments\",server_port=\"8080\","
                            "humus_bulkhead_mode=\"adaptive\"} 3\n"),
            std::string::npos)
      << prometheus;
  EXPECT_NE(prometheus.find("humus_bulkhead_limit{server_address=\"payments\",server_port=\"8080\","
                            "humus_bulkhead_mode=\"fixed\"} 0\n"),
            std::string::npos)
      << prometheus;

  ASSERT_EQ(humus_runtime_metrics_json(rt_, &text, &len, nullptr), HUMUS_OK);
  const json metrics = json::parse(take(text, len));
  bool found = false;
  for (const json& m : metrics["metrics"]) {
    if (m["name"] != "humus.bulkhead.limit") continue;
    found = true;
    EXPECT_EQ(m["type"], "gauge");
    ASSERT_EQ(m["points"].size(), 2u);
    EXPECT_EQ(m["points"][0]["attributes"]["humus.bulkhead.mode"], "fixed");
    EXPECT_EQ(m["points"][0]["value"], 0);
    EXPECT_EQ(m["points"][1]["attributes"]["humus.bulkhead.mode"], "adaptive");
    EXPECT_EQ(m["points"][1]["value"], 3);
  }
  EXPECT_TRUE(found);
}

TEST_F(BulkheadLimitCapiTest, FixedLimitIsMaxConcurrentAndArgumentsAreChecked) {
  make_client(R"({"base_url": "http://payments:8080", "max_attempts": 1,
                  "trip": {"consecutive_failures": 1000, "min_results": 1000}, "bulkhead": {"max_concurrent": 7}})");
  EXPECT_EQ(limit(), 7u);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(get("/busy"), HUMUS_OK);
  EXPECT_EQ(limit(), 7u);
  EXPECT_EQ(humus_client_bulkhead_limit(client_, nullptr), HUMUS_E_INVALID_ARGUMENT);
  uint32_t n = 0;
  EXPECT_EQ(humus_client_bulkhead_limit(nullptr, &n), HUMUS_E_MISUSE);
}

// F177: a 503 is a drop; a call that was cancelled, or sent nothing, moves nothing.
TEST_F(BulkheadLimitCapiTest, A503CutsTheLimitACancelledCallLeavesIt) {
  make_client(R"({"base_url": "http://payments:8080", "max_attempts": 1,
                  "trip": {"consecutive_failures": 1000, "min_results": 1000},
                  "bulkhead": {"mode": "adaptive", "algorithm": "aimd", "max_concurrent": 10, "min": 2, "max": 20}})");
  // A 503 is the call's response, and a drop: a window of them cuts to floor(10 · 0.9).
  for (int i = 0; i < 10; ++i) EXPECT_EQ(get("/busy"), HUMUS_OK);
  EXPECT_EQ(limit(), 9u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(get("/busy"), HUMUS_OK);
  EXPECT_EQ(limit(), 9u);  // a window is 10 samples

  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  humus_cancel_trigger(cancel);
  EXPECT_EQ(get("/busy", cancel), HUMUS_E_CANCELLED);  // cancelled before it was sent: no sample
  humus_cancel_free(cancel);
  EXPECT_EQ(limit(), 9u);
  EXPECT_EQ(get("/busy"), HUMUS_OK);  // the window's tenth sample
  EXPECT_EQ(limit(), 8u);
}

// F175
TEST_F(BulkheadLimitCapiTest, AdaptiveWithShareIsAConfigurationError) {
  const char* text = R"({"base_url": "http://payments:8080", "share": {"name": "adaptive-test"},
                         "bulkhead": {"mode": "adaptive"}})";
  humus_settings* s = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(humus_settings_from_json(text, std::strlen(text), &s, &err), HUMUS_E_CONFIG);
  const std::string message = humus_error_message(err);
  EXPECT_NE(message.find("bulkhead.mode"), std::string::npos) << message;
  std::string fields;
  for (size_t i = 0; i < humus_error_field_count(err); ++i) fields += std::string(humus_error_field(err, i)) + ",";
  EXPECT_EQ(fields, "bulkhead.mode,share,");
  humus_error_free(err);
  humus_settings_free(s);
}

// F175
TEST_F(BulkheadLimitCapiTest, MinAboveMaxIsAConfigurationErrorNamingBoth) {
  const char* text = R"({"base_url": "http://payments:8080", "bulkhead": {"min": 9, "max": 8}})";
  humus_settings* s = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(humus_settings_from_json(text, std::strlen(text), &s, &err), HUMUS_E_CONFIG);
  EXPECT_STREQ(humus_error_message(err), "bulkhead.min: must be <= bulkhead.max (8), got 9");
  ASSERT_EQ(humus_error_field_count(err), 2u);
  EXPECT_STREQ(humus_error_field(err, 0), "bulkhead.min");
  EXPECT_STREQ(humus_error_field(err, 1), "bulkhead.max");
  humus_error_free(err);
  humus_settings_free(s);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
