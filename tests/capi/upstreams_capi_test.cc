// The upstreams section of include/humus_http.h through the C ABI alone: clients by name, the process
// environment's base_url, unknown names, and readiness with names.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

humus_status answer_204(void*, const humus_mock_request*, humus_mock_reply* reply) {
  humus_mock_reply_set_status(reply, 204);
  return HUMUS_OK;
}

class CapiUpstreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* options = R"({"clock": "virtual"})";
    ASSERT_EQ(humus_runtime_new(options, std::strlen(options), &rt_, nullptr), HUMUS_OK);
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = answer_204;
    ASSERT_EQ(humus_runtime_set_mock_transport(rt_, &mock, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    humus_upstreams_free(upstreams_);
    humus_runtime_free(rt_);
  }
  humus_status build(const std::string& json, humus_error** err = nullptr) {
    return humus_upstreams_from_json(rt_, json.data(), json.size(), &upstreams_, err);
  }

  humus_runtime* rt_ = nullptr;
  humus_upstreams* upstreams_ = nullptr;
};

TEST_F(CapiUpstreamsTest, ClientsByNameWithTheEnvironmentsBaseUrl) {
  ASSERT_EQ(setenv("HUMUS_HTTP_UPSTREAMS__CAPI_TEST_LEDGER__BASE_URL", "http://ledger-env:9100", 1), 0);
  ASSERT_EQ(build(R"({"upstreams": {"capi_test_ledger": {"base_url": "http://ledger:9000"},
                                    "billing": {"base_url": "http://billing:8080", "max_attempts": 2}}})"),
            HUMUS_OK);
  unsetenv("HUMUS_HTTP_UPSTREAMS__CAPI_TEST_LEDGER__BASE_URL");
  ASSERT_EQ(humus_upstreams_count(upstreams_), 2u);
  EXPECT_STREQ(humus_upstreams_name(upstreams_, 0), "billing");
  EXPECT_STREQ(humus_upstreams_name(upstreams_, 1), "capi_test_ledger");
  EXPECT_EQ(humus_upstreams_name(upstreams_, 2), nullptr);

  humus_client* ledger = nullptr;
  ASSERT_EQ(humus_upstreams_client(upstreams_, "capi_test_ledger", &ledger, nullptr), HUMUS_OK);
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://ledger-env:9100/entries", &req, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(ledger, req, &resp, nullptr), HUMUS_OK);  // the environment's origin
  EXPECT_EQ(humus_response_status(resp), 204);
  humus_response_free(resp);
  humus_request_free(req);

  char* report = nullptr;
  ASSERT_EQ(humus_upstreams_readiness_json(upstreams_, &report, nullptr, nullptr), HUMUS_OK);
  const nlohmann::json r = nlohmann::json::parse(report);
  humus_string_free(report);
  EXPECT_EQ(r["status"], "ok");
  ASSERT_EQ(r["clients"].size(), 2u);
  EXPECT_EQ(r["clients"][1]["name"], "capi_test_ledger");
  EXPECT_EQ(r["clients"][1]["origin"], "http://ledger-env:9100");
}

TEST_F(CapiUpstreamsTest, AnUnknownNameListsTheConfiguredOnes) {
  ASSERT_EQ(build(R"({"upstreams": {"billing": {"base_url": "http://billing:8080"}}})"), HUMUS_OK);
  humus_client* c = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_upstreams_client(upstreams_, "biling", &c, &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(humus_error_message(err), "configured: billing"), nullptr) << humus_error_message(err);
  EXPECT_EQ(c, nullptr);
  humus_error_free(err);
}

TEST_F(CapiUpstreamsTest, AMisspeltKeyIsRefusedNamingItsPath) {
  humus_error* err = nullptr;
  EXPECT_EQ(build(R"({"upstreams": {"billing": {"base_url": "http://billing:8080", "retries": 3}}})", &err),
            HUMUS_E_CONFIG);
  ASSERT_EQ(humus_error_field_count(err), 1u);
  EXPECT_STREQ(humus_error_field(err, 0), "upstreams.billing.retries");
  humus_error_free(err);
  EXPECT_EQ(upstreams_, nullptr);
}

TEST_F(CapiUpstreamsTest, NullArgumentsAreRefused) {
  humus_upstreams* u = nullptr;
  EXPECT_EQ(humus_upstreams_from_json(nullptr, "{}", 2, &u, nullptr), HUMUS_E_MISUSE);  // NULL is no handle
  EXPECT_EQ(humus_upstreams_from_json(rt_, "{}", 2, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  humus_client* c = nullptr;
  EXPECT_EQ(humus_upstreams_client(nullptr, "x", &c, nullptr), HUMUS_E_MISUSE);  // NULL is no handle
  EXPECT_EQ(humus_upstreams_count(nullptr), 0u);
  humus_upstreams_free(nullptr);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
