// A whole response of humus_client_submit, made on the event-loop thread, goes back to that thread to be freed
// when another thread frees it (src/transport/free_on_loop.h): freed from several threads while calls still
// run, after its client and runtime are gone, and over real sockets to a peer that sends late bytes and
// resets connections, every response is freed once, its own contents intact until then. The ASan and TSan
// builds of this test are what check "once" and "no race".
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "humus_http.h"
#include "support/capi_client.h"
#include "support/raw_peer.h"

namespace {
namespace HUMUS_UNITY_ID {

humus_status answer(void*, const humus_mock_request*, humus_mock_reply* reply) {
  humus_mock_reply_set_status(reply, 200);
  humus_mock_reply_add_header(reply, "Date", "Fri, 04 Dec 2026 20:00:00 GMT");
  static const std::string body(300, 'r');
  humus_mock_reply_set_body(reply, body.data(), body.size());
  return HUMUS_OK;
}

// The responses of the calls, kept by their callbacks (on the loop thread) for the test to free.
struct Kept {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<humus_response*> responses;  // guarded by mu
  int arrived = 0;                         // guarded by mu
  int failures = 0;                        // guarded by mu

  bool wait_for(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return arrived >= n; });
  }
  std::vector<humus_response*> take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::move(responses);
  }
  int failed() {
    std::lock_guard<std::mutex> lock(mu);
    return failures;
  }
};

void keep(void* user, humus_status status, humus_response* resp, humus_error* err) {
  auto* k = static_cast<Kept*>(user);
  humus_error_free(err);
  std::lock_guard<std::mutex> lock(k->mu);
  ++k->arrived;
  if (status == HUMUS_OK) {
    k->responses.push_back(resp);
  } else {
    ++k->failures;
  }
  k->cv.notify_all();
}

class SubmitFreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt_, nullptr), HUMUS_OK);  // a real clock: a loop thread of its own
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = answer;
    ASSERT_EQ(humus_runtime_set_mock_transport(rt_, &mock, nullptr), HUMUS_OK);
    client_ = humus::testing::new_capi_client(rt_, R"({"base_url": "http://payments:8080", "bulkhead": {"max_concurrent": 1000}})");
    ASSERT_NE(client_, nullptr);
    ASSERT_EQ(humus_request_new("GET", "http://payments:8080/r", &req_, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    humus_request_free(req_);
    humus_client_free(client_);
    humus_runtime_free(rt_);
  }

  void submit(int n, Kept& kept) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(humus_client_submit(client_, req_, keep, &kept, nullptr, nullptr), HUMUS_OK);
    }
  }

  // Reads what a response holds, so a response freed early (or twice) shows as a sanitizer report here.
  static void check(const humus_response* resp) {
    ASSERT_EQ(humus_response_status(resp), 200);
    ASSERT_EQ(humus_response_header_count(resp), 1u);
    const char* name = nullptr;
    const char* value = nullptr;
    ASSERT_EQ(humus_response_header_at(resp, 0, &name, &value), HUMUS_OK);
    EXPECT_STREQ(value, "Fri, 04 Dec 2026 20:00:00 GMT");
  }

  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
  humus_request* req_ = nullptr;
};

TEST_F(SubmitFreeTest, ResponsesFreedOnSeveralThreadsWhileCallsRun) {
  Kept kept;
  constexpr int kCalls = 2000;
  std::atomic<bool> all_arrived{false};
  std::atomic<int> freed{0};
  // Four threads free what has come back while the calls are still being made and answered.
  std::vector<std::thread> freers;
  for (int t = 0; t < 4; ++t) {
    freers.emplace_back([&] {
      for (;;) {
        const bool last_round = all_arrived.load();
        std::vector<humus_response*> batch = kept.take();
        for (humus_response* r : batch) {
          check(r);
          humus_response_free(r);
          ++freed;
        }
        if (batch.empty()) {
          if (last_round) return;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
      }
    });
  }
  submit(kCalls, kept);
  EXPECT_TRUE(kept.wait_for(kCalls));
  all_arrived = true;
  for (std::thread& t : freers) t.join();
  EXPECT_EQ(kept.failed(), 0);
  EXPECT_EQ(freed.load(), kCalls);
}

TEST_F(SubmitFreeTest, ResponsesOutliveTheirClientAndRuntime) {
  Kept kept;
  submit(100, kept);
  ASSERT_TRUE(kept.wait_for(100));
  ASSERT_EQ(kept.failed(), 0);
  std::vector<humus_response*> left = kept.take();
  ASSERT_EQ(left.size(), 100u);
  // Half freed while the runtime lives, from this thread (given back to the loop), half once it is gone.
  for (size_t i = 0; i < 50; ++i) humus_response_free(left[i]);
  humus_client_free(client_);
  client_ = nullptr;
  humus_runtime_free(rt_);
  rt_ = nullptr;
  for (size_t i = 50; i < left.size(); ++i) {
    check(left[i]);
    humus_response_free(left[i]);
  }
}

// Over real sockets, to a peer that misbehaves: every fourth answer on a connection is followed by the bytes
// of another response, and every seventh request's connection is reset once answered. Each response is freed
// on another thread than the loop's that made it; each must still hold its own body (its request's path),
// never the late bytes, and the peer read no request the client did not count as an attempt.
TEST(SubmitFreePeerTest, ResponsesFromAMisbehavingPeerFreedElsewhereKeepTheirOwnBodies) {
  std::atomic<int> answered{0};
  humus::test::RawPeer peer([&](humus::test::RawConnection& c) {
    std::string head;
    for (int on_this = 1; c.read_request(&head); ++on_this) {
      const size_t from = head.find(' ') + 1;
      const std::string path = head.substr(from, head.find(' ', from) - from);
      std::string out = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(path.size()) + "\r\n\r\n" + path;
      if (on_this % 4 == 0) out += "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil";
      c.write(out);
      if (++answered % 7 == 0) {
        c.reset();
        return;
      }
    }
  });
  humus_runtime* rt = nullptr;
  ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt, nullptr), HUMUS_OK);
  humus_client* client = humus::testing::new_capi_client(
      rt, ("{\"base_url\": \"" + peer.url("") + "\", \"bulkhead\": {\"max_concurrent\": 100}}").c_str());
  ASSERT_NE(client, nullptr);

  constexpr int kCalls = 300;
  Kept kept;
  for (int i = 0; i < kCalls; ++i) {
    humus_request* req = nullptr;
    ASSERT_EQ(humus_request_new("GET", peer.url("/r/" + std::to_string(i)).c_str(), &req, nullptr), HUMUS_OK);
    ASSERT_EQ(humus_client_submit(client, req, keep, &kept, nullptr, nullptr), HUMUS_OK);
    humus_request_free(req);
  }
  ASSERT_TRUE(kept.wait_for(kCalls));
  EXPECT_EQ(kept.failed(), 0);
  int attempts = 0;
  std::thread freer([&] {
    for (humus_response* r : kept.take()) {
      const void* data = nullptr;
      size_t len = 0;
      EXPECT_EQ(humus_response_body(r, &data, &len, nullptr), HUMUS_OK);
      const std::string url = humus_response_url(r);
      EXPECT_EQ(std::string(static_cast<const char*>(data), len), url.substr(url.find("/r/"))) << url;
      attempts += humus_response_attempts(r);
      humus_response_free(r);  // on this thread, not the loop's: given back to the loop
    }
  });
  freer.join();
  humus_client_free(client);
  humus_runtime_free(rt);
  EXPECT_GE(peer.connections(), kCalls / 7);  // the resets happened, each costing a new connection
  EXPECT_GE(peer.requests(), kCalls);
  EXPECT_LE(peer.requests(), attempts);  // nothing reached the peer that the client did not count
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
