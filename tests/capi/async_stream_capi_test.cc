// Bodies read asynchronously (humus_client_submit_open + humus_response_read_async, docs/bodies.md §7) through the C
// ABI alone, against real loopback sockets: a GiB in bounded memory, many bodies at once on the one event loop
// over HTTP/1.1 and HTTP/2, the breaker counting the result at the end, an early close, a reset mid-body, a
// probe slot held by an open body, a read pending at the deadline, cancelled, or left pending by a free.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "humus_http.h"
#include "support/capi_fixture.h"
#include "support/sanitizers.h"
#include "support/stream_peer.h"
#include "support/test_server.h"

namespace {
namespace HUMUS_UNITY_ID {

using humus::test::Checksum;
using humus::test::kSanitized;
using humus::test::kThreadSanitized;
using humus::test::StreamPeer;
using std::chrono::milliseconds;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr auto kWait = std::chrono::seconds(60);

uint64_t status_field(const char* name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(name);
  while (std::getline(in, line)) {
    if (line.compare(0, len, name) == 0) return std::stoull(line.substr(len + 1)) * 1024;
  }
  return 0;
}

// One body read on the event loop. In `follow` mode each on_read starts the next read until the end or a
// failure; otherwise the test thread starts each read (read()) and waits for it.
struct Body {
  explicit Body(size_t buffer = 64 * 1024, bool follows = true) : buf(buffer), follow(follows) {}

  std::vector<char> buf;
  const bool follow;
  std::mutex mu;
  std::condition_variable cv;
  humus_response* resp = nullptr;  // set on the loop, read by the test thread after headers()
  bool headed = false;
  humus_status head_status = HUMUS_OK;
  std::string head_error;
  Checksum sum;
  bool all_x = true;  // the test server's bodies are 'x' bytes
  bool read_done = true;
  humus_status read_status = HUMUS_OK;
  size_t read_n = 0;
  std::string read_error;
  bool finished = false;  // follow mode: the end or a failure came
  std::atomic<uint64_t> peak_rss{0};
  bool sample_rss = false;
  uint64_t reads = 0;

  // Each callback notifies while it holds the lock: a waiter that sees the end may destroy the Body as soon as
  // it gets the lock, so nothing of the Body is touched after it is released — except by a callback that goes
  // on reading, which the waiter is still waiting for.
  static void on_headers(void* user, humus_status status, humus_response* resp, humus_error* err) {
    auto* b = static_cast<Body*>(user);
    bool read_on = false;
    {
      std::lock_guard<std::mutex> lock(b->mu);
      b->headed = true;
      b->head_status = status;
      b->resp = resp;
      if (err != nullptr) b->head_error = humus_error_message(err);
      if (status != HUMUS_OK) b->finished = true;
      read_on = status == HUMUS_OK && b->follow;
      b->cv.notify_all();
    }
    humus_error_free(err);
    if (read_on) b->next();
  }

  static void on_read(void* user, humus_status status, size_t n, humus_error* err) {
    auto* b = static_cast<Body*>(user);
    bool again = false;
    {
      std::lock_guard<std::mutex> lock(b->mu);
      b->read_done = true;
      b->read_status = status;
      b->read_n = n;
      b->read_error = err != nullptr ? humus_error_message(err) : "";
      if (status == HUMUS_OK && n > 0) {
        b->sum.update(reinterpret_cast<const uint8_t*>(b->buf.data()), n);
        if (b->all_x) b->all_x = std::all_of(b->buf.begin(), b->buf.begin() + static_cast<long>(n), [](char c) { return c == 'x'; });
        ++b->reads;
        if (b->sample_rss && b->reads % 512 == 0) {
          b->peak_rss = std::max(b->peak_rss.load(), status_field("VmRSS"));
        }
      }
      again = b->follow && status == HUMUS_OK && n > 0;
      if (b->follow && !again) b->finished = true;
      if (!again) b->cv.notify_all();
    }
    humus_error_free(err);
    if (again) b->next();
  }

  void next() {
    {
      std::lock_guard<std::mutex> lock(mu);
      read_done = false;
    }
    humus_error* err = nullptr;
    const humus_status st = humus_response_read_async(resp, buf.data(), buf.size(), &Body::on_read, this, &err);
    if (st != HUMUS_OK) {
      std::lock_guard<std::mutex> lock(mu);
      read_done = finished = true;
      read_status = st;
      read_error = err != nullptr ? humus_error_message(err) : "";
      humus_error_free(err);
      cv.notify_all();
    }
  }

  bool headers() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kWait, [&] { return headed; });
  }
  bool end() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kWait, [&] { return finished; });
  }
  bool wait_read() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kWait, [&] { return read_done; });
  }
  // Manual mode: one read, waited for.
  humus_status read() {
    next();
    EXPECT_TRUE(wait_read());
    std::lock_guard<std::mutex> lock(mu);
    return read_status;
  }
};

class AsyncStreamFixture : protected humus::test::CapiClientFixture {
 protected:
  void submit(humus_request* r, Body& b) {
    humus_error* err = nullptr;
    ASSERT_EQ(humus_client_submit_open(client_, r, &Body::on_headers, &b, nullptr, &err), HUMUS_OK)
        << (err ? humus_error_message(err) : "");
  }
};

class AsyncStreamPeerTest : public humus::test::CapiPeerTest<AsyncStreamFixture> {};

class AsyncStreamServerTest : public humus::test::CapiServerTest<AsyncStreamFixture> {
 protected:
  void make_server_client(const std::string& extra = "",
                          const std::string& timeouts = R"("timeout": "60s", "attempt_timeout": "30s")") {
    make_client("http://" + server().address("http"), extra, timeouts);
  }
  // A client of the server's HTTP/2 listener (TLS with the test CA), room for many calls at once.
  void make_h2_client() {
    make_client("https://" + server().host_port("https"), R"(, "tls": {"ca_file": ")" + server().ca_file() +
                                                              R"("}, "bulkhead": {"max_concurrent": 64})");
  }
};

TEST_F(AsyncStreamPeerTest, OneGibStreamsOnTheLoopInBoundedMemoryAndCountsAtTheEnd) {
  if (kThreadSanitized) GTEST_SKIP() << "a gigabyte under TSan nears the test's timeout; the other builds read it";
  make_client(peer_->base_url());
  humus_request* req = request(peer_->url("/bytes/" + std::to_string(kGiB)));
  const uint64_t before = status_field("VmRSS");
  const auto started = std::chrono::steady_clock::now();
  Body b;
  b.sample_rss = true;
  submit(req, b);
  ASSERT_TRUE(b.headers());
  ASSERT_EQ(b.head_status, HUMUS_OK) << b.head_error;
  EXPECT_EQ(humus_response_status(b.resp), 200);
  EXPECT_STREQ(humus_response_header(b.resp, "Content-Length"), std::to_string(kGiB).c_str());
  ASSERT_TRUE(b.end());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(b.read_status, HUMUS_OK) << b.read_error;
  EXPECT_EQ(b.sum.bytes(), kGiB);
  EXPECT_EQ(b.sum.value(), humus::test::pattern_checksum(kGiB));
  const uint64_t peak = std::max(b.peak_rss.load(), status_field("VmRSS"));
  const uint64_t growth = peak > before ? peak - before : 0;
  if (!kSanitized) {
    EXPECT_LT(growth, 8 * kMiB);
  }
  EXPECT_EQ(counts().successes, 1u);  // read to the end: counted once, before the last on_read
  humus_response_free(b.resp);
  EXPECT_EQ(counts().successes, 1u);
  std::printf("[async stream] 1 GiB in %.2f s (%.0f MiB/s), RSS growth %.2f MiB\n", seconds, 1024 / seconds,
              static_cast<double>(growth) / static_cast<double>(kMiB));
  humus_request_free(req);
}

// Bytes a peer sends past its Content-Length stay on the loop's pooled connection: the next call never reads
// them as its answer, because that connection takes no further request.
// F73
TEST_F(AsyncStreamPeerTest, BytesPastContentLengthNeverReachTheNextCall) {
  make_client(peer_->base_url());
  const uint64_t announced = 100'003;
  const std::string late = "/late/" + std::to_string(announced) + "/" + std::to_string(300 * 1024);
  humus_request* late_req = request(peer_->url(late));
  humus_request* next_req = request(peer_->url("/bytes/1000"));
  for (int round = 0; round < 3; ++round) {
    Body first(16 * 1024);
    submit(late_req, first);
    ASSERT_TRUE(first.end());
    EXPECT_EQ(first.read_status, HUMUS_OK) << first.read_error;
    EXPECT_EQ(first.sum.bytes(), announced);
    EXPECT_EQ(first.sum.value(), humus::test::pattern_checksum(announced));
    humus_response_free(first.resp);
    std::this_thread::sleep_for(milliseconds(20));  // the surplus waits on the idle connection
    Body next;
    submit(next_req, next);
    ASSERT_TRUE(next.end());
    EXPECT_EQ(next.head_status, HUMUS_OK) << next.head_error;
    EXPECT_EQ(next.read_status, HUMUS_OK) << next.read_error;
    EXPECT_EQ(next.sum.bytes(), 1000u);
    EXPECT_EQ(next.sum.value(), humus::test::pattern_checksum(1000));
    humus_response_free(next.resp);
  }
  EXPECT_EQ(peer_->count(late), 3u);
  EXPECT_EQ(peer_->count("/bytes/1000"), 3u);
  EXPECT_EQ(counts().failures, 0u);
  humus_request_free(late_req);
  humus_request_free(next_req);
}

TEST_F(AsyncStreamPeerTest, ManyBodiesAtOnceOnOneLoopOverHttp1) {
  make_client(peer_->base_url(), R"(, "bulkhead": {"max_concurrent": 64}, "max_idle_connections": 32)");
  constexpr int kBodies = 24;
  const uint64_t size = (kThreadSanitized ? 1 : 4) * kMiB + 123;
  humus_request* req = request(peer_->url("/bytes/" + std::to_string(size)));
  std::vector<std::unique_ptr<Body>> bodies;
  for (int i = 0; i < kBodies; ++i) {
    bodies.push_back(std::make_unique<Body>(8 * 1024 + static_cast<size_t>(i) * 1000));  // odd buffer sizes
    submit(req, *bodies.back());
  }
  for (auto& b : bodies) {
    ASSERT_TRUE(b->end());
    EXPECT_EQ(b->head_status, HUMUS_OK) << b->head_error;
    EXPECT_EQ(b->read_status, HUMUS_OK) << b->read_error;
    EXPECT_EQ(b->sum.bytes(), size);
    EXPECT_EQ(b->sum.value(), humus::test::pattern_checksum(size));
    humus_response_free(b->resp);
  }
  EXPECT_EQ(counts().successes, static_cast<uint64_t>(kBodies));
  EXPECT_EQ(counts().failures, 0u);
  humus_request_free(req);
}

TEST_F(AsyncStreamServerTest, ManyBodiesAtOnceOnOneLoopOverHttp2) {
  const int body_size = 512 * 1024 + 7;
  server().script("/big", nlohmann::json::array({{{"status", 200}, {"body_size", body_size}}}));
  make_h2_client();
  constexpr int kBodies = 16;
  humus_request* req = request(server().url("https", "/big"));
  std::vector<std::unique_ptr<Body>> bodies;
  for (int i = 0; i < kBodies; ++i) {
    bodies.push_back(std::make_unique<Body>(4096 + static_cast<size_t>(i) * 997));
    submit(req, *bodies.back());
  }
  for (auto& b : bodies) {
    ASSERT_TRUE(b->end());
    EXPECT_EQ(b->head_status, HUMUS_OK) << b->head_error;
    EXPECT_EQ(b->read_status, HUMUS_OK) << b->read_error;
    EXPECT_STREQ(humus_response_http_version(b->resp), "2");
    EXPECT_EQ(b->sum.bytes(), static_cast<uint64_t>(body_size));
    EXPECT_TRUE(b->all_x);
    humus_response_free(b->resp);
  }
  EXPECT_EQ(counts().successes, static_cast<uint64_t>(kBodies));
  std::vector<nlohmann::json> seen = server().requests("/big");
  ASSERT_EQ(seen.size(), static_cast<size_t>(kBodies));
  // Multiplexed: the bodies shared the client's connections instead of one each.
  std::vector<std::string> connections;
  for (const auto& r : seen) connections.push_back(r["connection"].dump());
  std::sort(connections.begin(), connections.end());
  connections.erase(std::unique(connections.begin(), connections.end()), connections.end());
  EXPECT_LT(connections.size(), static_cast<size_t>(kBodies));
  humus_request_free(req);
}

// Streams cut while paused, many at once on one HTTP/2 connection, then new requests on the handles they
// leave: each new body is exactly its own. (libcurl may still hold bytes of a paused stream for its handle;
// a handle reused after such a cut once handed the next request up to a whole receive buffer of them.)
TEST_F(AsyncStreamServerTest, StreamsCutWhilePausedLeaveNothingForTheNextRequests) {
  server().script("/cut", nlohmann::json::array({{{"status", 200}, {"body_size", 4 << 20}}}));
  const int exact = 100'003;
  server().script("/exact", nlohmann::json::array({{{"status", 200}, {"body_size", exact}}}));
  make_h2_client();
  constexpr int kBodies = 12;
  for (int round = 0; round < 3; ++round) {
    humus_request* cut = request(server().url("https", "/cut"));
    std::vector<std::unique_ptr<Body>> cuts;
    for (int i = 0; i < kBodies; ++i) {
      cuts.push_back(std::make_unique<Body>(1024, false));
      submit(cut, *cuts.back());
    }
    for (auto& b : cuts) {
      ASSERT_TRUE(b->headers());
      ASSERT_EQ(b->head_status, HUMUS_OK) << b->head_error;
      ASSERT_EQ(b->read(), HUMUS_OK) << b->read_error;
    }
    std::this_thread::sleep_for(milliseconds(100));  // libcurl takes in more of each paused stream meanwhile
    for (auto& b : cuts) humus_response_close(b->resp);
    humus_request_free(cut);

    humus_request* next = request(server().url("https", "/exact"));
    std::vector<std::unique_ptr<Body>> bodies;
    for (int i = 0; i < kBodies; ++i) {
      bodies.push_back(std::make_unique<Body>(16 * 1024));
      submit(next, *bodies.back());
    }
    for (auto& b : bodies) {
      ASSERT_TRUE(b->end());
      EXPECT_EQ(b->read_status, HUMUS_OK) << b->read_error;
      EXPECT_EQ(b->sum.bytes(), static_cast<uint64_t>(exact)) << "round " << round;
      humus_response_free(b->resp);
    }
    humus_request_free(next);
    // Each call one request on the wire: none retried, none sent twice.
    const size_t sent = static_cast<size_t>((round + 1) * kBodies);
    EXPECT_EQ(server().requests("/cut").size(), sent) << "round " << round;
    EXPECT_EQ(server().requests("/exact").size(), sent) << "round " << round;
  }
}

// One buffered call of humus_client_submit, waited for.
struct Buffered {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  humus_status status = HUMUS_OK;
  size_t body_len = 0;
  humus_call* call = nullptr;

  static void on_done(void* user, humus_status status, humus_response* resp, humus_error* err) {
    auto* b = static_cast<Buffered*>(user);
    const void* data = nullptr;
    size_t len = 0;
    if (resp != nullptr) humus_response_body(resp, &data, &len, nullptr);
    humus_response_free(resp);
    humus_error_free(err);
    std::lock_guard<std::mutex> lock(b->mu);
    b->done = true;
    b->status = status;
    b->body_len = len;
    b->cv.notify_all();
  }
  bool wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kWait, [&] { return done; });
  }
};

// The same for buffered calls cancelled mid-body: the handles they leave give the next calls their own
// bodies. (A buffered transfer is never paused, so libcurl keeps none of its bytes back: its handle is
// reused.)
TEST_F(AsyncStreamServerTest, BufferedCallsCancelledMidBodyLeaveNothingForTheNextCalls) {
  // 4 MiB at 16 KiB per 50 ms takes 13 s: every call is cut mid-body, however slow the machine.
  server().script("/cut",
                  nlohmann::json::array({{{"status", 200}, {"body_size", 4 << 20}, {"chunk_delay_ms", 50}}}));
  const int exact = 100'003;
  server().script("/exact", nlohmann::json::array({{{"status", 200}, {"body_size", exact}}}));
  make_h2_client();
  constexpr int kCalls = 12;
  for (int round = 0; round < 2; ++round) {
    humus_request* cut = request(server().url("https", "/cut"));
    std::vector<std::unique_ptr<Buffered>> cuts;
    for (int i = 0; i < kCalls; ++i) {
      cuts.push_back(std::make_unique<Buffered>());
      ASSERT_EQ(humus_client_submit(client_, cut, &Buffered::on_done, cuts.back().get(), &cuts.back()->call,
                                    nullptr),
                HUMUS_OK);
    }
    // Cancelled once the server holds every request, and its first pieces are on their way.
    const size_t held = static_cast<size_t>((round + 1) * kCalls);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (server().requests("/cut").size() < held && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    ASSERT_EQ(server().requests("/cut").size(), held);
    std::this_thread::sleep_for(milliseconds(150));
    for (auto& b : cuts) humus_call_cancel(b->call);
    for (auto& b : cuts) {
      ASSERT_TRUE(b->wait());
      EXPECT_EQ(b->status, HUMUS_E_CANCELLED);
      humus_call_free(b->call);
    }
    humus_request_free(cut);

    humus_request* next = request(server().url("https", "/exact"));
    std::vector<std::unique_ptr<Buffered>> calls;
    for (int i = 0; i < kCalls; ++i) {
      calls.push_back(std::make_unique<Buffered>());
      ASSERT_EQ(humus_client_submit(client_, next, &Buffered::on_done, calls.back().get(), nullptr, nullptr),
                HUMUS_OK);
    }
    for (auto& b : calls) {
      ASSERT_TRUE(b->wait());
      EXPECT_EQ(b->status, HUMUS_OK);
      EXPECT_EQ(b->body_len, static_cast<size_t>(exact)) << "round " << round;
    }
    humus_request_free(next);
    const size_t sent = static_cast<size_t>((round + 1) * kCalls);
    EXPECT_EQ(server().requests("/cut").size(), sent) << "round " << round;
    EXPECT_EQ(server().requests("/exact").size(), sent) << "round " << round;
  }
}

// A stream whose call timed out leaves the HTTP/2 connection to the one other stream still on it: that one
// ends whole. (The connection of a timed-out attempt is dropped only when no other transfer shares it; a
// streamed transfer once counted itself out before deciding, and cut the connection under the other.)
TEST_F(AsyncStreamServerTest, ATimedOutStreamLeavesItsConnectionToTheOtherStream) {
  // 24 chunks, 100 ms apart: about 2.4 s, which the timed call's 1 s cannot outlast; its head has time enough
  // on a loaded machine.
  const int slow = 24 * 16 * 1024;
  server().script("/slow",
                  nlohmann::json::array({{{"status", 200}, {"body_size", slow}, {"chunk_delay_ms", 100}}}));
  make_h2_client();
  humus_request* timed = request(server().url("https", "/slow"));
  ASSERT_EQ(humus_request_set_timeout_ms(timed, 1000, nullptr), HUMUS_OK);
  humus_request* whole = request(server().url("https", "/slow"));
  Body cut;
  Body kept;
  submit(timed, cut);
  submit(whole, kept);
  ASSERT_TRUE(cut.end());
  EXPECT_EQ(cut.read_status, HUMUS_E_TIMEOUT) << cut.read_error;
  ASSERT_TRUE(kept.end());
  EXPECT_EQ(kept.read_status, HUMUS_OK) << kept.read_error;
  EXPECT_EQ(kept.sum.bytes(), static_cast<uint64_t>(slow));
  std::vector<nlohmann::json> seen = server().requests("/slow");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0]["connection"], seen[1]["connection"]);  // the two shared one connection
  humus_response_free(cut.resp);
  humus_response_free(kept.resp);
  humus_request_free(timed);
  humus_request_free(whole);
}

TEST_F(AsyncStreamPeerTest, EarlyCloseCountsTheResultAsClassified) {
  make_client(peer_->base_url());
  {
    humus_request* req = request(peer_->url("/bytes/" + std::to_string(64 * kMiB)));
    Body b(16 * 1024, false);
    submit(req, b);
    ASSERT_TRUE(b.headers());
    ASSERT_EQ(b.head_status, HUMUS_OK) << b.head_error;
    ASSERT_EQ(b.read(), HUMUS_OK) << b.read_error;
    EXPECT_GT(b.read_n, 0u);
    EXPECT_EQ(counts().successes, 0u);  // not before the body ends or closes
    humus_response_free(b.resp);        // closed before its end
    EXPECT_TRUE(eventually(&humus_breaker_counts::successes, 1));
    EXPECT_EQ(counts().failures, 0u);
    humus_request_free(req);
  }
  {
    humus_request* req = request(peer_->url("/status/500"));
    Body b(16 * 1024, false);
    submit(req, b);
    ASSERT_TRUE(b.headers());
    EXPECT_EQ(humus_response_status(b.resp), 500);
    EXPECT_EQ(counts().failures, 0u);
    humus_response_free(b.resp);  // a 500 is a breaker failure, counted when closed
    EXPECT_TRUE(eventually(&humus_breaker_counts::failures, 1));
    humus_request_free(req);
  }
  // The closed body's connection was not reused for a half-read stream: the next call reads whole.
  humus_request* req = request(peer_->url("/bytes/1000"));
  Body b;
  submit(req, b);
  ASSERT_TRUE(b.end());
  EXPECT_EQ(b.read_status, HUMUS_OK) << b.read_error;
  EXPECT_EQ(b.sum.value(), humus::test::pattern_checksum(1000));
  humus_response_free(b.resp);
  humus_request_free(req);
}

// humus_response_close counts before it returns: no waiting for the loop afterwards. A read pending at the
// close completes (cancelled) before the close returns, and the result is still counted as classified.
TEST_F(AsyncStreamPeerTest, CloseCountsTheResultBeforeItReturns) {
  make_client(peer_->base_url());
  humus_request* req = request(peer_->url("/bytes/" + std::to_string(64 * kMiB)));
  {
    Body b(16 * 1024, false);
    submit(req, b);
    ASSERT_TRUE(b.headers());
    ASSERT_EQ(b.head_status, HUMUS_OK) << b.head_error;
    ASSERT_EQ(b.read(), HUMUS_OK) << b.read_error;
    EXPECT_EQ(counts().successes, 0u);
    humus_response_close(b.resp);
    EXPECT_EQ(counts().successes, 1u);
  }
  {
    Body b(16 * 1024, false);
    submit(req, b);
    ASSERT_TRUE(b.headers());
    ASSERT_EQ(b.head_status, HUMUS_OK) << b.head_error;
    b.next();  // left pending: the close completes it first
    humus_response_close(b.resp);
    {
      std::lock_guard<std::mutex> lock(b.mu);
      EXPECT_TRUE(b.read_done);  // its bytes came first, or it was cancelled by the close
      EXPECT_TRUE(b.read_status == HUMUS_OK || b.read_status == HUMUS_E_CANCELLED) << b.read_error;
    }
    EXPECT_EQ(counts().successes, 2u);
    EXPECT_EQ(counts().failures, 0u);
  }
  humus_response_close(nullptr);  // ignored, as humus_response_free(NULL) is
  humus_request_free(req);
}

TEST_F(AsyncStreamPeerTest, MidBodyResetIsABreakerFailure) {
  make_client(peer_->base_url());
  humus_request* req = request(peer_->url("/reset/" + std::to_string(8 * kMiB) + "/" + std::to_string(kMiB)));
  Body b;
  submit(req, b);
  ASSERT_TRUE(b.end());
  EXPECT_EQ(b.head_status, HUMUS_OK) << b.head_error;
  EXPECT_EQ(b.read_status, HUMUS_E_CONNECTION_LOST) << b.read_error;
  EXPECT_NE(b.read_error.find("reading the response body"), std::string::npos) << b.read_error;
  EXPECT_LE(b.sum.bytes(), kMiB);
  EXPECT_EQ(counts().failures, 1u);
  EXPECT_EQ(counts().successes, 0u);
  // Every later read fails the same way; the free counts nothing more.
  Body again(1024, false);
  again.resp = b.resp;
  EXPECT_EQ(again.read(), HUMUS_E_CONNECTION_LOST);
  humus_response_free(b.resp);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(counts().failures, 1u);
  humus_request_free(req);
}

TEST_F(AsyncStreamServerTest, AReadPendingAtTheDeadlineEndsWithTimeout) {
  // The body would come after 30 s: the read pending when the call's 1.5 s deadline passes ends with it.
  server().script("/slow", nlohmann::json::array({{{"status", 200}, {"body_size", 100}, {"body_delay_ms", 30000}}}));
  make_server_client("", R"("timeout": "1500ms", "attempt_timeout": "1s")");
  humus_request* req = request(url("/slow"));
  Body b(1024, false);
  const auto started = std::chrono::steady_clock::now();
  submit(req, b);
  ASSERT_TRUE(b.headers());
  ASSERT_EQ(b.head_status, HUMUS_OK) << b.head_error;
  EXPECT_EQ(b.read(), HUMUS_E_TIMEOUT) << b.read_error;  // pending when the deadline passed
  EXPECT_NE(b.read_error.find("deadline"), std::string::npos) << b.read_error;
  EXPECT_GE(std::chrono::steady_clock::now() - started, milliseconds(1450));  // not before: a lower bound
  EXPECT_EQ(b.sum.bytes(), 0u);
  EXPECT_EQ(counts().failures, 1u);
  EXPECT_EQ(b.read(), HUMUS_E_TIMEOUT);  // and every read after
  humus_response_free(b.resp);
  humus_request_free(req);
}

TEST_F(AsyncStreamServerTest, CancellingDuringAPendingReadEndsItAndTheBreakerIgnoresIt) {
  // The body would come after 30 s, within the call's 60 s: only the cancel can end the pending read. The 20 s
  // bound tells a cancel acted on from a read left to its body; no loaded machine nears it.
  server().script("/slow", nlohmann::json::array({{{"status", 200}, {"body_size", 100}, {"body_delay_ms", 30000}}}));
  make_server_client();
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  humus_request* req = request(url("/slow"));
  ASSERT_EQ(humus_request_set_cancel(req, cancel), HUMUS_OK);
  Body b(1024, false);
  submit(req, b);
  ASSERT_TRUE(b.headers());
  ASSERT_EQ(b.head_status, HUMUS_OK) << b.head_error;
  const auto started = std::chrono::steady_clock::now();
  b.next();
  std::this_thread::sleep_for(milliseconds(100));
  {
    std::lock_guard<std::mutex> lock(b.mu);
    EXPECT_FALSE(b.read_done);  // still pending: the body waits 30 s
  }
  humus_cancel_trigger(cancel);
  ASSERT_TRUE(b.wait_read());
  EXPECT_EQ(b.read_status, HUMUS_E_CANCELLED) << b.read_error;
  EXPECT_EQ(b.sum.bytes(), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  humus_response_free(b.resp);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(counts().successes, 0u);
  EXPECT_EQ(counts().failures, 0u);
  humus_request_free(req);
  humus_cancel_free(cancel);
}

TEST_F(AsyncStreamServerTest, FreeingWithAReadPendingCompletesItWithCancelledThenClosesAsClassified) {
  server().script("/slow", nlohmann::json::array({{{"status", 200}, {"body_size", 100}, {"body_delay_ms", 5000}}}));
  make_server_client();
  humus_request* req = request(url("/slow"));
  Body b(1024, false);
  submit(req, b);
  ASSERT_TRUE(b.headers());
  ASSERT_EQ(b.head_status, HUMUS_OK) << b.head_error;
  b.next();
  std::this_thread::sleep_for(milliseconds(50));
  humus_response_free(b.resp);
  ASSERT_TRUE(b.wait_read());
  EXPECT_EQ(b.read_status, HUMUS_E_CANCELLED);
  EXPECT_NE(b.read_error.find("freed"), std::string::npos) << b.read_error;
  EXPECT_TRUE(eventually(&humus_breaker_counts::successes, 1));  // closed, counted as its 200 was classified
  EXPECT_EQ(counts().failures, 0u);
  humus_request_free(req);
}

TEST_F(AsyncStreamServerTest, OneReadAtATimeAndOnlyForItsOwnResponses) {
  server().script("/slow", nlohmann::json::array({{{"status", 200}, {"body_size", 100}, {"body_delay_ms", 3000}}}));
  make_server_client();
  humus_request* req = request(url("/slow"));
  Body b(1024, false);
  submit(req, b);
  ASSERT_TRUE(b.headers());
  ASSERT_EQ(b.head_status, HUMUS_OK) << b.head_error;
  b.next();
  char other[16];
  humus_error* err = nullptr;
  EXPECT_EQ(humus_response_read_async(b.resp, other, sizeof other, &Body::on_read, &b, &err), HUMUS_E_MISUSE);
  EXPECT_NE(std::string(humus_error_message(err)).find("pending"), std::string::npos);
  humus_error_free(err);
  size_t n = 0;
  EXPECT_EQ(humus_response_read(b.resp, other, sizeof other, &n, nullptr), HUMUS_E_MISUSE);
  const void* data = nullptr;
  EXPECT_EQ(humus_response_body(b.resp, &data, &n, nullptr), HUMUS_E_MISUSE);
  EXPECT_EQ(humus_response_read_async(b.resp, nullptr, 1, &Body::on_read, &b, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_response_read_async(b.resp, other, 0, &Body::on_read, &b, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_response_read_async(b.resp, other, 1, nullptr, &b, nullptr), HUMUS_E_INVALID_ARGUMENT);
  ASSERT_TRUE(b.wait_read());  // the first read: the body came after its delay
  EXPECT_EQ(b.read_status, HUMUS_OK) << b.read_error;
  EXPECT_EQ(b.read_n, 100u);
  EXPECT_EQ(b.read(), HUMUS_OK);
  EXPECT_EQ(b.read_n, 0u);  // the end
  humus_response_free(b.resp);
  EXPECT_EQ(humus_response_read_async(b.resp, other, 1, &Body::on_read, &b, nullptr), HUMUS_E_MISUSE);  // freed

  // A response of humus_client_do is read with humus_response_read.
  humus_request* plain = request(url("/plain"));
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, plain, &resp, nullptr), HUMUS_OK);
  err = nullptr;
  EXPECT_EQ(humus_response_read_async(resp, other, 1, &Body::on_read, &b, &err), HUMUS_E_MISUSE);
  EXPECT_NE(std::string(humus_error_message(err)).find("humus_client_submit_open"), std::string::npos);
  humus_error_free(err);
  humus_response_free(resp);
  EXPECT_EQ(humus_client_submit_open(client_, plain, nullptr, nullptr, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_client_submit_open(nullptr, plain, &Body::on_headers, &b, nullptr, nullptr), HUMUS_E_MISUSE);
  EXPECT_EQ(humus_client_submit_open(client_, nullptr, &Body::on_headers, &b, nullptr, nullptr), HUMUS_E_MISUSE);
  humus_request_free(plain);
  humus_request_free(req);
}

TEST_F(AsyncStreamServerTest, ASmallBodyIsReadAheadAndRetriedALargeOneReturnedIntact) {
  server().script("/flaky", nlohmann::json::array({{{"status", 503}, {"body", "busy"}},
                                                   {{"status", 200}, {"body_size", 300000}}}));
  server().script("/large503", nlohmann::json::array({{{"status", 503}, {"body_size", 100000}}}));
  make_server_client(R"(, "max_attempts": 3)");
  humus_request* flaky = request(url("/flaky"));
  Body b;
  submit(flaky, b);
  ASSERT_TRUE(b.end());
  ASSERT_EQ(b.head_status, HUMUS_OK) << b.head_error;
  EXPECT_EQ(humus_response_status(b.resp), 200);
  EXPECT_EQ(humus_response_attempts(b.resp), 2);
  EXPECT_EQ(b.read_status, HUMUS_OK) << b.read_error;
  EXPECT_EQ(b.sum.bytes(), 300000u);
  EXPECT_TRUE(b.all_x);
  humus_response_free(b.resp);

  humus_request* large = request(url("/large503"));
  Body l;
  submit(large, l);
  ASSERT_TRUE(l.end());
  ASSERT_EQ(l.head_status, HUMUS_OK) << l.head_error;
  EXPECT_EQ(humus_response_status(l.resp), 503);
  EXPECT_EQ(humus_response_attempts(l.resp), 1);  // over 64 KiB: not retried, returned whole
  EXPECT_EQ(l.sum.bytes(), 100000u);
  EXPECT_TRUE(l.all_x);
  humus_response_free(l.resp);
  EXPECT_EQ(server().requests("/large503").size(), 1u);
  humus_request_free(large);
  humus_request_free(flaky);
}

TEST_F(AsyncStreamServerTest, AnOpenBodyHoldsAProbeSlotForAtMostProbeTimeout) {
  server().script("/fail", nlohmann::json::array({{{"status", 500}}}));
  server().script("/big", nlohmann::json::array({{{"status", 200}, {"body_size", 4 * 1024 * 1024}}}));
  make_server_client(R"(, "max_attempts": 1, "breaker": {"open_for": "200ms", "probes": 1, "probe_timeout": "5s"},
      "trip": {"consecutive_failures": 2}, "probe": {"successes_to_close": 1})");
  humus_response* resp = nullptr;
  humus_request* fail = request(url("/fail"));
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(humus_client_do(client_, fail, &resp, nullptr), HUMUS_OK);
    humus_response_free(resp);
  }
  // Tripped: open, or already half-open on a machine slow enough to let the 200 ms pass before this reads it.
  ASSERT_NE(state(), HUMUS_CIRCUIT_CLOSED);
  std::this_thread::sleep_for(milliseconds(250));  // past open_for: a lower bound, which load only lengthens
  ASSERT_EQ(state(), HUMUS_CIRCUIT_HALF_OPEN);

  humus_request* big = request(url("/big"));
  Body probe(16 * 1024, false);
  submit(big, probe);  // the probe, its body left open
  ASSERT_TRUE(probe.headers());
  ASSERT_EQ(probe.head_status, HUMUS_OK) << probe.head_error;
  Body rejected(1024, false);
  submit(big, rejected);
  ASSERT_TRUE(rejected.headers());
  EXPECT_EQ(rejected.head_status, HUMUS_E_REJECTED);  // its slot is taken

  // The slot was taken for the probe_timeout's 5 s, far longer than any machine takes between the probe and
  // the call turned away; past them, it is freed.
  std::this_thread::sleep_for(milliseconds(5100));
  Body second;
  submit(big, second);
  ASSERT_TRUE(second.end());
  ASSERT_EQ(second.head_status, HUMUS_OK) << second.head_error;
  EXPECT_EQ(second.sum.bytes(), 4u * 1024 * 1024);
  humus_response_free(second.resp);
  EXPECT_EQ(state(), HUMUS_CIRCUIT_CLOSED);  // the second probe's success closed it
  humus_response_free(probe.resp);           // a stale result: changes nothing
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(state(), HUMUS_CIRCUIT_CLOSED);
  EXPECT_EQ(counts().failures, 0u);
  humus_request_free(big);
  humus_request_free(fail);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
