// humus_response_read_ready (docs/bodies.md §7): a body read without waiting in the library, the caller
// waiting on the socket it names, through the C ABI alone against the real test server: a dripping body
// arrives whole through those waits and counts its result at the end; a silent one names a wait no longer
// than the call's timeout and then times out as a breaker failure; a cancel made while the caller waits is
// what the next read reports, and the breaker ignores it; a buffered body never asks for a wait.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <string>
#include <vector>

#include "humus_http.h"
#include "support/test_server.h"

namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;

// What a caller with its own poller does: reads what is there, waits on the named socket while nothing is.
struct ReadyReader {
  std::string body;
  int waits = 0;
  int64_t longest_wait_ms = -1;
  bool ended = false;

  // Reads until the end or a failure; the status of the last read.
  humus_status read_all(humus_response* resp) {
    std::vector<char> buf(64 * 1024);
    for (;;) {
      size_t n = 0;
      int fd = -2;
      int64_t wait_ms = -2;
      const humus_status st =
          humus_response_read_ready(resp, buf.data(), buf.size(), &n, &fd, &wait_ms, nullptr);
      if (st != HUMUS_OK) return st;
      if (n > 0) {
        EXPECT_EQ(fd, -1);  // bytes come without a wait to make
        body.append(buf.data(), n);
        continue;
      }
      if (fd < 0) {
        ended = true;
        return st;
      }
      ++waits;
      longest_wait_ms = std::max(longest_wait_ms, wait_ms);
      pollfd ready{fd, POLLIN, 0};
      poll(&ready, 1, static_cast<int>(wait_ms));
    }
  }
};

class ReadReadyTest : public humus::test::WithTestServer {
 protected:
  void SetUp() override {
    WithTestServer::SetUp();
    ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt_, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    humus_client_free(client_);
    humus_runtime_free(rt_);
  }
  void make_client(const std::string& timeout, const std::string& attempt_timeout = "5s") {
    const std::string json = R"({"base_url": "http://)" + server().address("http") + R"(", "timeout": ")" +
                             timeout + R"(", "attempt_timeout": ")" + attempt_timeout +
                             R"(", "max_attempts": 1})";
    humus_settings* s = nullptr;
    ASSERT_EQ(humus_settings_from_json(json.data(), json.size(), &s, nullptr), HUMUS_OK);
    ASSERT_EQ(humus_client_new(rt_, s, &client_, nullptr), HUMUS_OK);
    humus_settings_free(s);
  }
  humus_request* request(const std::string& path) {
    humus_request* r = nullptr;
    EXPECT_EQ(humus_request_new("GET", server().url("http", path).c_str(), &r, nullptr), HUMUS_OK);
    return r;
  }
  humus_breaker_counts counts() {
    humus_breaker_counts c = HUMUS_BREAKER_COUNTS_INIT;
    EXPECT_EQ(humus_client_breaker_counts(client_, &c), HUMUS_OK);
    return c;
  }

  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
};

TEST_F(ReadReadyTest, ADrippingBodyArrivesWholeThroughWaitsOnItsSocket) {
  // 16 KiB pieces 30 ms apart: the reader catches up with the server between them.
  server().script(
      "/drip", nlohmann::json::array({{{"status", 200}, {"body_size", 160 * 1024}, {"chunk_delay_ms", 30}}}));
  make_client("10s");
  humus_request* req = request("/drip");
  humus_response* whole = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &whole, nullptr), HUMUS_OK);  // the same body, buffered
  const void* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_response_body(whole, &data, &len, nullptr), HUMUS_OK);
  const std::string expected(static_cast<const char*>(data), len);
  humus_response_free(whole);
  ASSERT_EQ(expected.size(), 160u * 1024);

  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  const uint64_t before = counts().successes;
  ReadyReader reader;
  ASSERT_EQ(reader.read_all(resp), HUMUS_OK);
  EXPECT_TRUE(reader.ended);
  EXPECT_EQ(reader.body, expected);
  EXPECT_GE(reader.waits, 3);  // the pieces came apart, and each gap was a wait on the socket
  EXPECT_GT(reader.longest_wait_ms, 0);
  EXPECT_LE(reader.longest_wait_ms, 10'000);  // never past the call's timeout
  EXPECT_EQ(counts().successes, before + 1);  // read to the end: counted once
  humus_response_free(resp);
  EXPECT_EQ(counts().successes, before + 1);
  humus_request_free(req);
}

TEST_F(ReadReadyTest, ASilentBodyNamesAWaitWithinTheTimeoutThenTimesOut) {
  // The body would come after 30 s: the timeout that ends the read is the call's own 1 s, reached through
  // the waits it named, none of them longer than what was left of it.
  server().script("/silent",
                  nlohmann::json::array({{{"status", 200}, {"body_size", 1000}, {"body_delay_ms", 30000}}}));
  make_client("1s", "1s");
  humus_request* req = request("/silent");
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  ReadyReader reader;
  EXPECT_EQ(reader.read_all(resp), HUMUS_E_TIMEOUT);
  EXPECT_GE(reader.waits, 1);
  EXPECT_LE(reader.longest_wait_ms, 1000);
  EXPECT_TRUE(reader.body.empty());
  EXPECT_EQ(counts().failures, 1u);  // a body that stalls past the timeout is the dependency's failure
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(ReadReadyTest, ACancelWhileTheCallerWaitsIsWhatTheNextReadReports) {
  server().script("/silent",
                  nlohmann::json::array({{{"status", 200}, {"body_size", 1000}, {"body_delay_ms", 3000}}}));
  make_client("10s");
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  humus_request* req = request("/silent");
  humus_request_set_cancel(req, cancel);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  char buf[4096];
  size_t n = 1;
  int fd = -1;
  int64_t wait_ms = -1;
  ASSERT_EQ(humus_response_read_ready(resp, buf, sizeof buf, &n, &fd, &wait_ms, nullptr), HUMUS_OK);
  EXPECT_EQ(n, 0u);
  ASSERT_GE(fd, 0);  // nothing yet: wait on this
  humus_cancel_trigger(cancel);
  humus_error* err = nullptr;
  EXPECT_EQ(humus_response_read_ready(resp, buf, sizeof buf, &n, &fd, &wait_ms, &err), HUMUS_E_CANCELLED);
  EXPECT_EQ(fd, -1);
  humus_error_free(err);
  humus_response_free(resp);
  EXPECT_EQ(counts().failures, 0u);  // the caller's cancel says nothing of the dependency
  EXPECT_EQ(counts().successes, 0u);
  humus_request_free(req);
  humus_cancel_free(cancel);
}

TEST_F(ReadReadyTest, ABufferedBodyNeverAsksForAWait) {
  server().script("/small", nlohmann::json::array({{{"status", 200}, {"body_size", 70000}}}));
  make_client("10s");
  humus_request* req = request("/small");
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  ReadyReader reader;
  ASSERT_EQ(reader.read_all(resp), HUMUS_OK);
  EXPECT_TRUE(reader.ended);
  EXPECT_EQ(reader.waits, 0);
  EXPECT_EQ(reader.body.size(), 70000u);
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(ReadReadyTest, ItsArgumentsAreChecked) {
  server().script("/small", nlohmann::json::array({{{"status", 200}, {"body_size", 10}}}));
  make_client("10s");
  humus_request* req = request("/small");
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  char buf[16];
  size_t n = 0;
  int fd = 0;
  int64_t wait_ms = 0;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_response_read_ready(resp, buf, sizeof buf, &n, nullptr, &wait_ms, &err),
            HUMUS_E_INVALID_ARGUMENT);
  EXPECT_NE(std::string(humus_error_message(err)).find("wait_fd"), std::string::npos);
  humus_error_free(err);
  EXPECT_EQ(humus_response_read_ready(resp, buf, sizeof buf, &n, &fd, nullptr, nullptr),
            HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_response_read_ready(resp, buf, 0, &n, &fd, &wait_ms, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_response_read_ready(nullptr, buf, sizeof buf, &n, &fd, &wait_ms, nullptr), HUMUS_E_MISUSE);
  humus_response_free(resp);
  humus_request_free(req);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
