// humus_version_info: the run-time report of the linked libraries (SECURITY.md asks reports to include it).
#include <gtest/gtest.h>

#include <curl/curl.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "humus_http.h"

namespace {
namespace HUMUS_UNITY_ID {

nlohmann::json report() {
  char* out = nullptr;
  size_t len = 0;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_version_info(&out, &len, &err), HUMUS_OK);
  EXPECT_EQ(err, nullptr);
  EXPECT_NE(out, nullptr);
  EXPECT_EQ(std::strlen(out), len);
  nlohmann::json j = nlohmann::json::parse(std::string(out, len));
  humus_string_free(out);
  return j;
}

// S26
TEST(CapiVersionInfo, NamesTheLibraryAndTheLibcurlLoaded) {
  const nlohmann::json j = report();
  EXPECT_EQ(j.at("humus_http"), HUMUS_VERSION_STRING);
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  EXPECT_EQ(j.at("libcurl"), info->version);
  ASSERT_TRUE(j.contains("ssl"));
  EXPECT_NE(j.at("ssl").get<std::string>().find("OpenSSL"), std::string::npos);
  if (info->libz_version != nullptr) {
    EXPECT_EQ(j.at("zlib"), info->libz_version);
  }
  if (info->nghttp2_version != nullptr) {
    EXPECT_EQ(j.at("nghttp2"), info->nghttp2_version);
  }
}

TEST(CapiVersionInfo, FeaturesAreSortedLowercaseAndIncludeWhatTheClientNeeds) {
  const nlohmann::json j = report();
  const auto features = j.at("features").get<std::vector<std::string>>();
  EXPECT_TRUE(std::is_sorted(features.begin(), features.end()));
  for (const std::string& f : features) {
    for (char c : f) EXPECT_FALSE(c >= 'A' && c <= 'Z') << f;
  }
  // The client refuses to build without them (check_curl_features), so the report must show them.
  EXPECT_NE(std::find(features.begin(), features.end(), "ssl"), features.end());
  EXPECT_NE(std::find(features.begin(), features.end(), "http2"), features.end());
}

TEST(CapiVersionInfo, LenMayBeNullAndOutMayNot) {
  char* out = nullptr;
  ASSERT_EQ(humus_version_info(&out, nullptr, nullptr), HUMUS_OK);
  EXPECT_EQ(out[0], '{');
  humus_string_free(out);

  humus_error* err = nullptr;
  EXPECT_EQ(humus_version_info(nullptr, nullptr, &err), HUMUS_E_INVALID_ARGUMENT);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(humus_error_message(err)).find("out"), std::string::npos);
  humus_error_free(err);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
