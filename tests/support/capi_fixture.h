// A runtime and one client made through the C ABI, for the tests of tests/capi that read bodies on the event
// loop (async_stream_capi_test.cc, read_ahead_capi_test.cc): made from settings JSON, freed by stop(); and
// the two kinds of suite they run, against the C++ stream peer and against the Python test server.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "humus_http.h"
#include "support/stream_peer.h"
#include "support/test_server.h"

namespace humus::test {

class CapiClientFixture {
 protected:
  void start_runtime(const std::string& options = "") {
    ASSERT_EQ(humus_runtime_new(options.empty() ? nullptr : options.data(), options.size(), &rt_, nullptr), HUMUS_OK);
  }
  void stop() {
    humus_client_free(client_);
    client_ = nullptr;
    humus_runtime_free(rt_);
    rt_ = nullptr;
  }
  // A client of `base_url` with short backoffs, `timeouts` and the `extra` settings (", \"key\": ..." each).
  void make_client(const std::string& base_url, const std::string& extra = "",
                   const std::string& timeouts = R"("timeout": "60s", "attempt_timeout": "30s")") {
    const std::string json = R"({"base_url": ")" + base_url + R"(", )" + timeouts +
                             R"(, "backoff_base": "1ms", "backoff_max": "2ms")" + extra + "}";
    humus_settings* s = nullptr;
    humus_error* err = nullptr;
    ASSERT_EQ(humus_settings_from_json(json.data(), json.size(), &s, &err), HUMUS_OK)
        << (err ? humus_error_message(err) : "");
    ASSERT_EQ(humus_client_new(rt_, s, &client_, &err), HUMUS_OK) << (err ? humus_error_message(err) : "");
    humus_settings_free(s);
  }
  humus_request* request(const std::string& url, const char* method = "GET") {
    humus_request* r = nullptr;
    EXPECT_EQ(humus_request_new(method, url.c_str(), &r, nullptr), HUMUS_OK);
    return r;
  }
  humus_breaker_counts counts() {
    humus_breaker_counts c = HUMUS_BREAKER_COUNTS_INIT;
    EXPECT_EQ(humus_client_breaker_counts(client_, &c), HUMUS_OK);
    return c;
  }
  // The breaker hears of a freed body on the loop thread: waits (bounded) for a count to reach `want`.
  bool eventually(uint64_t humus_breaker_counts::*field, uint64_t want) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (counts().*field != want) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  int32_t state() {
    int32_t s = -1;
    EXPECT_EQ(humus_client_breaker_state(client_, &s), HUMUS_OK);
    return s;
  }

  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
};

// Against the C++ stream peer, one per suite: exact bytes (a checksum), large bodies, exact resets.
template <typename Fixture>
class CapiPeerTest : public ::testing::Test, protected Fixture {
 protected:
  static void SetUpTestSuite() { peer_ = new StreamPeer(); }
  static void TearDownTestSuite() {
    delete peer_;
    peer_ = nullptr;
  }
  void SetUp() override { this->start_runtime(); }
  void TearDown() override { this->stop(); }
  static inline StreamPeer* peer_ = nullptr;
};

// Against the Python test server (HTTP/2, scripted delays, statuses, resets), its TLS name resolved.
template <typename Fixture>
class CapiServerTest : public WithTestServer, protected Fixture {
 protected:
  void SetUp() override {
    WithTestServer::SetUp();
    this->start_runtime(R"({"resolve": {")" + server().host_port("https") + R"(": ")" + server().address("https") +
                        R"("}})");
  }
  void TearDown() override { this->stop(); }
  std::string url(const std::string& path) { return server().url("http", path); }
};

}  // namespace humus::test
