#include "capi/settings_capi.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "humus_http.h"

namespace {

humus_status from_json(const std::string& json, humus_settings** out, humus_error** err) {
  return humus_settings_from_json(json.data(), json.size(), out, err);
}

TEST(CapiSettings, FromJsonToJsonAndFree) {
  humus_settings* s = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(from_json(R"({"base_url": "https://payments", "timeout": "30s"})", &s, &err), HUMUS_OK);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(err, nullptr);
  EXPECT_EQ(s->value.timeout, std::chrono::seconds(30));

  char* json = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_settings_to_json(s, &json, &len, &err), HUMUS_OK);
  ASSERT_NE(json, nullptr);
  EXPECT_EQ(std::strlen(json), len);
  EXPECT_NE(std::string(json).find("\"timeout\":\"30s\""), std::string::npos) << json;

  humus_settings* again = nullptr;
  ASSERT_EQ(humus_settings_from_json(json, len, &again, nullptr), HUMUS_OK);
  EXPECT_EQ(again->value, s->value);

  char* no_len = nullptr;
  ASSERT_EQ(humus_settings_to_json(s, &no_len, nullptr, nullptr), HUMUS_OK);  // len may be NULL
  EXPECT_STREQ(no_len, json);

  humus_string_free(no_len);
  humus_string_free(json);
  humus_string_free(nullptr);
  humus_settings_free(again);
  humus_settings_free(s);
  humus_settings_free(nullptr);
}

TEST(CapiSettings, LengthIsHonoured) {
  const std::string json = R"({"base_url": "https://payments"}garbage)";
  humus_settings* s = nullptr;
  ASSERT_EQ(humus_settings_from_json(json.data(), json.size() - 7, &s, nullptr), HUMUS_OK);
  humus_settings_free(s);
}

TEST(CapiSettings, ConfigErrorListsEveryField) {
  humus_settings* s = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(from_json(R"({"base_url": "https://p", "timout": "5s", "breaker": {"window": 0}})", &s, &err),
            HUMUS_E_CONFIG);
  EXPECT_EQ(s, nullptr);  // outputs are written only on success
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(humus_error_status(err), HUMUS_E_CONFIG);
  ASSERT_EQ(humus_error_field_count(err), 2u);
  EXPECT_STREQ(humus_error_field(err, 0), "timout");
  EXPECT_STREQ(humus_error_field(err, 1), "breaker.window");
  EXPECT_NE(std::string(humus_error_message(err)).find("did you mean \"timeout\""), std::string::npos);
  const humus_error* last = humus_last_error();
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(humus_error_status(last), HUMUS_E_CONFIG);
  EXPECT_STREQ(humus_error_message(last), humus_error_message(err));
  humus_error_free(err);
}

TEST(CapiSettings, ErrorWithoutErrPointerStillSetsLastError) {
  humus_settings* s = nullptr;
  ASSERT_EQ(from_json("[1]", &s, nullptr), HUMUS_E_CONFIG);
  ASSERT_NE(humus_last_error(), nullptr);
  EXPECT_NE(std::string(humus_error_message(humus_last_error())).find("must be a JSON object"),
            std::string::npos);
}

TEST(CapiSettings, CrossFieldRulesAreConfigErrors) {
  humus_settings* s = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(from_json(R"({"base_url": "http://p", "tls": {}})", &s, &err), HUMUS_E_CONFIG);
  EXPECT_EQ(humus_error_field_count(err), 2u);
  humus_error_free(err);
}

TEST(CapiSettings, NullArguments) {
  humus_settings* s = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_settings_from_json(nullptr, 0, &s, &err), HUMUS_E_INVALID_ARGUMENT);
  ASSERT_NE(err, nullptr);
  EXPECT_STREQ(humus_error_message(err), "humus_settings_from_json: json is NULL");
  EXPECT_STREQ(humus_error_field(err, 0), "json");
  EXPECT_EQ(humus_error_status(humus_last_error()), HUMUS_E_INVALID_ARGUMENT);
  humus_error_free(err);
  err = nullptr;
  EXPECT_EQ(humus_settings_from_json("{}", 2, nullptr, &err), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_STREQ(humus_error_field(err, 0), "out");
  humus_error_free(err);

  EXPECT_EQ(humus_settings_clone(nullptr, &s, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_settings_check(nullptr, "1", 1, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_settings_check("timeout", nullptr, 0, nullptr), HUMUS_E_INVALID_ARGUMENT);
  char* json = nullptr;
  EXPECT_EQ(humus_settings_to_json(nullptr, &json, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(json, nullptr);

  ASSERT_EQ(from_json(R"({"base_url": "https://p"})", &s, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_settings_clone(s, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_settings_to_json(s, nullptr, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  humus_settings_free(s);
}

TEST(CapiSettings, CloneIsIndependent) {
  humus_settings* s = nullptr;
  ASSERT_EQ(from_json(R"({"base_url": "https://p", "headers": {"X-A": "1"}})", &s, nullptr), HUMUS_OK);
  humus_settings* copy = nullptr;
  ASSERT_EQ(humus_settings_clone(s, &copy, nullptr), HUMUS_OK);
  ASSERT_NE(copy, s);
  EXPECT_EQ(copy->value, s->value);
  humus_settings_free(s);  // the copy outlives its source
  EXPECT_EQ(*copy->value.headers.find("x-a"), "1");
  humus_settings_free(copy);
}

TEST(CapiSettings, Check) {
  humus_error* err = nullptr;
  EXPECT_EQ(humus_settings_check("timeout", "\"5s\"", 4, &err), HUMUS_OK);
  EXPECT_EQ(err, nullptr);
  EXPECT_EQ(humus_settings_check("breaker.window", "10001", 5, &err), HUMUS_E_CONFIG);
  ASSERT_NE(err, nullptr);
  EXPECT_STREQ(humus_error_field(err, 0), "breaker.window");
  EXPECT_STREQ(humus_error_message(err), "breaker.window: must be between 1 and 10000, got 10001");
  humus_error_free(err);
  err = nullptr;
  EXPECT_EQ(humus_settings_check("max_atempts", "3", 1, &err), HUMUS_E_CONFIG);
  EXPECT_STREQ(humus_error_message(err), "unknown key \"max_atempts\" (did you mean \"max_attempts\"?)");
  humus_error_free(err);
  EXPECT_EQ(humus_settings_check("timeout", "\"5s\"", 2, nullptr), HUMUS_E_CONFIG);  // only `"5` is read
}

TEST(CapiSettings, TruncatedInputNeverCrashes) {
  const std::string doc =
      R"({"base_url": "https://p", "retry_budget": {"policy": "ratio"}, "tls": {"min_version": "1.3"},)"
      R"( "headers": {"X-A": "b"}, "breaker": {"window": 5}})";
  for (size_t n = 0; n <= doc.size(); ++n) {
    humus_settings* s = nullptr;
    humus_error* err = nullptr;
    const humus_status st = humus_settings_from_json(doc.data(), n, &s, &err);
    if (n == doc.size()) {
      EXPECT_EQ(st, HUMUS_OK);
    } else {
      EXPECT_EQ(st, HUMUS_E_CONFIG) << n;
    }
    humus_settings_free(s);
    humus_error_free(err);
  }
}

}  // namespace
