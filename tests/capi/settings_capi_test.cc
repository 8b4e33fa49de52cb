#include "capi/settings_capi.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

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

  EXPECT_EQ(humus_settings_clone(nullptr, &s, nullptr), HUMUS_E_MISUSE);  // NULL is no handle
  EXPECT_EQ(humus_settings_check(nullptr, "1", 1, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_settings_check("timeout", nullptr, 0, nullptr), HUMUS_E_INVALID_ARGUMENT);
  char* json = nullptr;
  EXPECT_EQ(humus_settings_to_json(nullptr, &json, nullptr, nullptr), HUMUS_E_MISUSE);  // NULL is no handle
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

}  // namespace HUMUS_UNITY_ID
}  // namespace

namespace {
namespace HUMUS_UNITY_ID {

TEST(CapiSettings, CheckFieldIsTheSameCheckUnderItsPinnedName) {
  humus_error* err = nullptr;
  EXPECT_EQ(humus_settings_check_field("timeout", "\"5s\"", 4, &err), HUMUS_OK);
  EXPECT_EQ(err, nullptr);
  EXPECT_EQ(humus_settings_check_field("max_response_body", "100", 3, &err), HUMUS_E_CONFIG);
  ASSERT_NE(err, nullptr);
  EXPECT_STREQ(humus_error_field(err, 0), "max_response_body");
  EXPECT_STREQ(humus_error_message(err), "max_response_body: must be between 1024 and 1099511627776, got 100");
  humus_error_free(err);
  EXPECT_EQ(humus_settings_check_field(nullptr, "1", 1, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_settings_check_field("timeout", nullptr, 0, nullptr), HUMUS_E_INVALID_ARGUMENT);
}

nlohmann::json schema_document() {
  char* text = nullptr;
  size_t len = 0;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_settings_schema_json(&text, &len, &err), HUMUS_OK);
  EXPECT_EQ(err, nullptr);
  if (text == nullptr) return nullptr;
  EXPECT_EQ(std::strlen(text), len);
  nlohmann::json doc = nlohmann::json::parse(text, text + len);
  humus_string_free(text);
  return doc;
}

const nlohmann::json* entry(const nlohmann::json& doc, const std::string& key) {
  for (const auto& k : doc["keys"]) {
    if (k["key"] == key) return &k;
  }
  return nullptr;
}

TEST(CapiSettings, SchemaJsonDescribesEveryKey) {
  const nlohmann::json doc = schema_document();
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["version"], 1);
  ASSERT_TRUE(doc["keys"].is_array());
  EXPECT_EQ(humus_settings_schema_json(nullptr, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);

  const nlohmann::json* window = entry(doc, "breaker.window");
  ASSERT_NE(window, nullptr);
  EXPECT_EQ((*window)["kind"], "count");
  EXPECT_EQ((*window)["default"], 20);
  EXPECT_EQ((*window)["min"], 1);
  EXPECT_EQ((*window)["max"], 10000);
  const nlohmann::json* timeout = entry(doc, "timeout");
  ASSERT_NE(timeout, nullptr);
  EXPECT_EQ((*timeout)["kind"], "duration");
  EXPECT_EQ((*timeout)["default"], "10s");
  EXPECT_EQ((*timeout)["min"], "0s");
  EXPECT_EQ((*timeout)["min_exclusive"], true);
  EXPECT_EQ((*timeout)["max"], "1h");
  EXPECT_FALSE(entry(doc, "attempt_timeout")->contains("max"));
  const nlohmann::json* lifetime = entry(doc, "max_connection_lifetime");
  ASSERT_NE(lifetime, nullptr);
  EXPECT_EQ((*lifetime)["default"], "10m");
  EXPECT_EQ((*lifetime)["min"], "1s");
  EXPECT_EQ((*lifetime)["max"], "24h");
  const nlohmann::json* body = entry(doc, "max_response_body");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ((*body)["kind"], "bytes");
  EXPECT_EQ((*body)["default"], 67108864);
  EXPECT_EQ((*body)["max"], int64_t{1} << 40);
  EXPECT_EQ((*entry(doc, "max_response_headers"))["default"], 65536);
  EXPECT_EQ((*entry(doc, "decompress"))["kind"], "bool");
  EXPECT_EQ((*entry(doc, "decompress"))["default"], true);
  EXPECT_EQ((*entry(doc, "http_version"))["choices"], nlohmann::json::array({"auto", "1.1", "2"}));
  EXPECT_EQ((*entry(doc, "tls"))["nullable"], true);
  EXPECT_EQ((*entry(doc, "base_url"))["required"], true);
  EXPECT_EQ((*entry(doc, "headers"))["kind"], "map");
  EXPECT_EQ((*entry(doc, "retry_budget.ratio"))["kind"], "share");
  for (const auto& k : doc["keys"]) {
    EXPECT_TRUE(k["doc"].is_string() && !k["doc"].get<std::string>().empty()) << k.dump();
  }
}

nlohmann::json effective_json(const std::string& json) {
  humus_settings* s = nullptr;
  EXPECT_EQ(from_json(json, &s, nullptr), HUMUS_OK) << json;
  char* text = nullptr;
  EXPECT_EQ(humus_settings_to_json(s, &text, nullptr, nullptr), HUMUS_OK);
  nlohmann::json effective = nlohmann::json::parse(text);
  humus_string_free(text);
  humus_settings_free(s);
  return effective;
}

// Every key to_json writes is in the schema; every scalar default the schema reports is what to_json writes
// for settings left at their defaults, and a value check_field accepts.
TEST(CapiSettings, SchemaAgreesWithTheSettingsJson) {
  const nlohmann::json doc = schema_document();
  // With tls and the ratio policy every key appears in to_json.
  const nlohmann::json full = effective_json(R"({"base_url": "https://p", "tls": {"ca_file": "/ca",
      "cert_file": "/c", "key_file": "/k"}, "retry_budget": {"policy": "ratio"}, "headers": {"X-A": "1"}})");
  size_t written = 0;
  for (const auto& [key, value] : full.items()) {
    EXPECT_NE(entry(doc, key), nullptr) << key;
    ++written;
    if (!value.is_object() || key == "headers") continue;
    for (const auto& [child, unused] : value.items()) {
      EXPECT_NE(entry(doc, key + "." + child), nullptr) << key << "." << child;
      ++written;
    }
  }
  EXPECT_GE(written, 40u);

  const nlohmann::json defaults = effective_json(R"({"base_url": "https://p"})");
  size_t compared = 0;
  for (const auto& k : doc["keys"]) {
    const std::string key = k["key"];
    const std::string kind = k["kind"];
    if (kind == "object" || kind == "map" || k["default"].is_null()) continue;
    const std::string value = k["default"].dump();
    EXPECT_EQ(humus_settings_check_field(key.c_str(), value.data(), value.size(), nullptr), HUMUS_OK) << key;
    const size_t dot = key.find('.');
    const nlohmann::json* written_default = &defaults;
    if (dot != std::string::npos) {
      if (!defaults.contains(key.substr(0, dot)) || defaults[key.substr(0, dot)].is_null()) continue;  // tls
      written_default = &defaults[key.substr(0, dot)];
    }
    const std::string name = dot == std::string::npos ? key : key.substr(dot + 1);
    if (!written_default->contains(name)) continue;  // keys of the ratio policy
    EXPECT_EQ((*written_default)[name], k["default"]) << key;
    ++compared;
  }
  EXPECT_GE(compared, 29u);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
