// The C++ harness of the test server: it starts, scripts, records and resets — checked with raw libcurl so
// that a failure here points at the harness, never at the client under test.
#include "support/test_server.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace humus::test {
namespace {
namespace HUMUS_UNITY_ID {

struct Fetched {
  long status = 0;
  std::string body;
  std::string headers;
  long http_version = 0;
};

size_t append(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// One GET over TLS to LISTENER, trusting only the test CA and reaching `payments` through CURLOPT_RESOLVE.
Fetched fetch(TestServer& server, std::string_view listener, std::string_view path) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> resolve(
      curl_slist_append(nullptr, server.resolve_entry(listener).c_str()), &curl_slist_free_all);
  const std::string url = server.url(listener, path);
  const std::string ca = server.ca_file();
  Fetched out;
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_RESOLVE, resolve.get());
  curl_easy_setopt(h, CURLOPT_CAINFO, ca.c_str());
  curl_easy_setopt(h, CURLOPT_CAPATH, nullptr);
  curl_easy_setopt(h, CURLOPT_PROXY, "");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, append);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &out.headers);
  const CURLcode code = curl_easy_perform(h);
  EXPECT_EQ(code, CURLE_OK) << curl_easy_strerror(code);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out.status);
  curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &out.http_version);
  return out;
}

class TestServerTest : public WithTestServer {};

TEST_F(TestServerTest, ReadyLineNamesEveryListener) {
  for (const char* listener : {"http", "https", "https_h1", "mtls", "cn_only", "untrusted"}) {
    EXPECT_GT(server().port(listener), 0) << listener;
  }
  EXPECT_GE(server().port("tls11"), 0);
  EXPECT_THROW((void)server().port("nope"), std::runtime_error);
  EXPECT_EQ(server().ca_file(), server().certs_dir() + "/ca.pem");
}

TEST_F(TestServerTest, ScriptsA503ThenA200OverHttps) {
  server().script("/pay", nlohmann::json::array({
                              {{"status", 503}, {"headers", {{"Retry-After", "2"}}}, {"body", "busy"}},
                              {{"status", 200}, {"body", "paid"}},
                          }));

  const Fetched first = fetch(server(), "https", "/pay");
  const Fetched second = fetch(server(), "https", "/pay");

  EXPECT_EQ(first.status, 503);
  EXPECT_NE(first.headers.find("retry-after: 2"), std::string::npos) << first.headers;
  EXPECT_EQ(first.body, "busy");
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.body, "paid");
  EXPECT_EQ(second.http_version, static_cast<long>(CURL_HTTP_VERSION_2_0));

  const auto records = server().requests("/pay");
  ASSERT_EQ(records.size(), 2u);
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i]["method"], "GET");
    EXPECT_EQ(records[i]["protocol"], "2");
    EXPECT_EQ(records[i]["tls"], true);
    EXPECT_EQ(records[i]["listener"], "https");
    EXPECT_EQ(records[i]["step"], static_cast<int>(i));
    EXPECT_EQ(records[i]["authority"], server().host_port("https"));
  }
}

TEST_F(TestServerTest, HttpsH1ListenerSpeaksHttp11AndResetForgets) {
  server().script("/h1", nlohmann::json::array({{{"status", 418}}}));
  EXPECT_EQ(fetch(server(), "https_h1", "/h1").http_version, static_cast<long>(CURL_HTTP_VERSION_1_1));
  ASSERT_EQ(server().requests("/h1").size(), 1u);
  EXPECT_EQ(server().requests("/h1")[0]["protocol"], "1.1");

  server().reset();
  EXPECT_TRUE(server().requests("/h1").empty());
  EXPECT_EQ(fetch(server(), "https_h1", "/h1").status, 200);  // the script is gone: default echo
}

TEST_F(TestServerTest, RefusesAMisspeltStep) {
  EXPECT_THROW(server().script("/typo", nlohmann::json::array({{{"statuz", 503}}})), std::runtime_error);
}

TEST(TestServerOwnInstance, StopsWhenDestroyed) {
  auto server = std::make_unique<TestServer>();
  EXPECT_GT(server->port("http"), 0);
  server.reset();  // closes stdin and reaps the process within the grace period
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::test
