// The shared-state section of include/humus_http.h through the C ABI alone (docs/shared.md §22.5): a segment a
// client made, listed, shown and removed; bad, unknown and NULL names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

humus_status answer_503(void*, const humus_mock_request*, humus_mock_reply* reply) {
  humus_mock_reply_set_status(reply, 503);
  return HUMUS_OK;
}

std::string unique_name(const char* what) {
  return std::string("capi-") + what + "-" + std::to_string(::getpid());
}

std::string error_text(humus_error* err) {
  std::string text = humus_error_message(err);
  humus_error_free(err);
  return text;
}

TEST(CapiShared, AClientsSegmentIsListedShownAndRemoved) {
  const std::string name = unique_name("made");
  (void)humus_shared_remove(name.c_str(), nullptr);  // a run killed before its end left it
  humus_runtime* rt = nullptr;  // the real clock: a shared client needs it (docs/shared.md §22.3)
  ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt, nullptr), HUMUS_OK);
  humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
  mock.respond = answer_503;
  ASSERT_EQ(humus_runtime_set_mock_transport(rt, &mock, nullptr), HUMUS_OK);
  const std::string json = R"({"base_url": "http://shared-capi.test:8080", "max_attempts": 1,
      "trip": {"consecutive_failures": 2}, "share": {"name": ")" + name + R"("}})";
  humus_settings* s = nullptr;
  ASSERT_EQ(humus_settings_from_json(json.data(), json.size(), &s, nullptr), HUMUS_OK);
  humus_client* c = nullptr;
  ASSERT_EQ(humus_client_new(rt, s, &c, nullptr), HUMUS_OK);
  humus_request* req = nullptr;
  ASSERT_EQ(humus_request_new("GET", "http://shared-capi.test:8080/x", &req, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(c, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 503);
  humus_response_free(resp);
  humus_request_free(req);

  char* out = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_shared_list_json(&out, &len, nullptr), HUMUS_OK);
  const nlohmann::json list = nlohmann::json::parse(std::string(out, len));
  EXPECT_EQ(std::strlen(out), len);
  humus_string_free(out);
  nlohmann::json entry;
  for (const auto& seg : list["segments"]) {
    if (seg["name"] == name) entry = seg;
  }
  ASSERT_TRUE(entry.is_object()) << list.dump();
  EXPECT_EQ(entry["origins"], nlohmann::json::array({"http://shared-capi.test:8080"}));
  EXPECT_EQ(entry["live_processes"], 1);  // this one, while its client lives
  EXPECT_GT(entry["size"].get<uint64_t>(), 0u);

  ASSERT_EQ(humus_shared_show_json(name.c_str(), &out, nullptr, nullptr), HUMUS_OK);
  const nlohmann::json report = nlohmann::json::parse(out);
  humus_string_free(out);
  ASSERT_EQ(report["origins"].size(), 1u);
  const auto& o = report["origins"][0];
  EXPECT_EQ(o["state"], "closed");  // one failure of the two that open it
  EXPECT_EQ(o["counts"]["failures"], 1);
  EXPECT_EQ(o["counts"]["consecutive_failures"], 1);
  EXPECT_EQ(o["bulkhead"]["in_flight"], 0);
  ASSERT_EQ(report["processes"].size(), 1u);
  EXPECT_EQ(report["processes"][0]["pid"], ::getpid());
  EXPECT_EQ(report["processes"][0]["clients"], 1);

  EXPECT_EQ(humus_shared_remove(name.c_str(), nullptr), HUMUS_OK);
  EXPECT_NE(::access(("/dev/shm/humus_http." + name).c_str(), F_OK), 0);
  humus_error* err = nullptr;
  EXPECT_EQ(humus_shared_show_json(name.c_str(), &out, nullptr, &err), HUMUS_E_INVALID_ARGUMENT);
  error_text(err);
  humus_client_free(c);  // its mapping outlived the name
  humus_settings_free(s);
  humus_runtime_free(rt);
}

TEST(CapiShared, AnUnknownNameIsAnInvalidArgument) {
  const std::string name = unique_name("absent");
  char* out = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_shared_show_json(name.c_str(), &out, nullptr, &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(out, nullptr);
  EXPECT_NE(error_text(err).find(name), std::string::npos);
  err = nullptr;
  EXPECT_EQ(humus_shared_remove(name.c_str(), &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_NE(error_text(err).find("No such file"), std::string::npos);
}

TEST(CapiShared, ABadNameIsAConfigErrorNamingTheRule) {
  for (const char* bad : {"", ".hidden", "../etc/passwd", "a/b"}) {
    char* out = nullptr;
    humus_error* err = nullptr;
    EXPECT_EQ(humus_shared_show_json(bad, &out, nullptr, &err), HUMUS_E_CONFIG) << bad;
    EXPECT_NE(error_text(err).find("1 to 64 letters"), std::string::npos) << bad;
    err = nullptr;
    EXPECT_EQ(humus_shared_remove(bad, &err), HUMUS_E_CONFIG) << bad;
    ASSERT_EQ(humus_error_field_count(err), 1u);
    EXPECT_STREQ(humus_error_field(err, 0), "share.name");
    humus_error_free(err);
  }
}

TEST(CapiShared, NullArgumentsAreInvalid) {
  char* out = nullptr;
  EXPECT_EQ(humus_shared_list_json(nullptr, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_shared_show_json(nullptr, &out, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_shared_show_json("x", nullptr, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_shared_remove(nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
