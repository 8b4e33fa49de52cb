// Bodies read ahead into the library's ring (humus_response_read_ahead + humus_response_take, docs/bodies.md
// §7) through the C ABI alone, against real loopback sockets: a large body exact and in bounded memory with one
// `ready` per HUMUS_TOOK_WAIT, a small one whole with its one `ready`, many at once over HTTP/2 read by threads
// of their own, a reset mid-body, a read pending at the deadline, a cancel, a close with a read pending, misuse.
#include <gtest/gtest.h>

#include <algorithm>
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

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr auto kWait = std::chrono::seconds(60);

uint64_t rss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 6, "VmRSS:") == 0) return std::stoull(line.substr(7)) * 1024;
  }
  return 0;
}

// One body read ahead: its headers start the ring on the loop thread; a reader thread takes from it and waits
// for `ready` after each HUMUS_TOOK_WAIT.
struct Reader {
  std::mutex mu;
  std::condition_variable cv;
  bool headed = false;
  humus_status head_status = HUMUS_OK;
  std::string head_error;
  humus_response* resp = nullptr;
  int whole = -1;
  bool hold_whole = true;  // whether read_ahead is given `whole` (NULL: every body told as it comes)
  uint64_t readies = 0;  // `ready` calls so far

  static void on_ready(void* user, humus_response*) {
    auto* r = static_cast<Reader*>(user);
    std::lock_guard<std::mutex> lock(r->mu);
    ++r->readies;
    r->cv.notify_all();
  }
  static void on_headers(void* user, humus_status status, humus_response* resp, humus_error* err) {
    auto* r = static_cast<Reader*>(user);
    humus_status ahead = status;
    std::string ahead_error = err != nullptr ? humus_error_message(err) : "";
    humus_error_free(err);
    int whole = -1;
    if (status == HUMUS_OK) {
      humus_error* e = nullptr;
      ahead = humus_response_read_ahead(resp, 0, &Reader::on_ready, r, r->hold_whole ? &whole : nullptr, &e);
      if (e != nullptr) ahead_error = humus_error_message(e);
      humus_error_free(e);
    }
    std::lock_guard<std::mutex> lock(r->mu);
    r->headed = true;
    r->head_status = ahead;
    r->head_error = ahead_error;
    r->resp = resp;
    r->whole = whole;
    r->cv.notify_all();
  }
  bool headers() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kWait, [&] { return headed; });
  }
  // Waits until `ready` ran `n` times in all.
  bool readied(uint64_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kWait, [&] { return readies >= n; });
  }
  uint64_t ready_count() {
    std::lock_guard<std::mutex> lock(mu);
    return readies;
  }
};

// What a whole read of a body brought.
struct Drained {
  humus_status status = HUMUS_OK;
  std::string error;
  Checksum sum;
  bool all_x = true;
  uint64_t waits = 0;  // HUMUS_TOOK_WAIT answers
  uint64_t peak_rss = 0;
};

// Takes until the end or a failure, waiting for `ready` after each HUMUS_TOOK_WAIT.
Drained drain(Reader& r, size_t buffer, bool sample_rss = false) {
  Drained d;
  std::vector<char> buf(buffer);
  uint64_t takes = 0;
  // A `ready` that came before the first take (a whole body's) answers no wait: the count starts there.
  const uint64_t base = r.ready_count();
  for (;;) {
    size_t n = 0;
    int32_t took = -1;
    humus_error* err = nullptr;
    d.status = humus_response_take(r.resp, buf.data(), buf.size(), 0, &n, &took, &err);
    if (d.status != HUMUS_OK) {
      d.error = err != nullptr ? humus_error_message(err) : "";
      humus_error_free(err);
      return d;
    }
    if (n > 0) {
      d.sum.update(reinterpret_cast<const uint8_t*>(buf.data()), n);
      const auto end = buf.begin() + static_cast<long>(n);
      if (d.all_x) d.all_x = std::all_of(buf.begin(), end, [](char c) { return c == 'x'; });
    }
    if (sample_rss && ++takes % 256 == 0) d.peak_rss = std::max(d.peak_rss, rss());
    if (took == HUMUS_TOOK_END || took == HUMUS_TOOK_LAST) return d;
    if (took == HUMUS_TOOK_WAIT && !r.readied(base + ++d.waits)) {
      d.status = HUMUS_E_TIMEOUT;
      d.error = "no ready came";
      return d;
    }
  }
}

class ReadAheadFixture : protected humus::test::CapiClientFixture {
 protected:
  // Submits the call and waits for its headers, the ring started.
  void open(humus_request* req, Reader& r) {
    humus_error* err = nullptr;
    ASSERT_EQ(humus_client_submit_open(client_, req, &Reader::on_headers, &r, nullptr, &err), HUMUS_OK)
        << (err ? humus_error_message(err) : "");
    ASSERT_TRUE(r.headers());
    ASSERT_EQ(r.head_status, HUMUS_OK) << r.head_error;
  }
};

class ReadAheadPeerTest : public humus::test::CapiPeerTest<ReadAheadFixture> {};
class ReadAheadServerTest : public humus::test::CapiServerTest<ReadAheadFixture> {};

TEST_F(ReadAheadPeerTest, ALargeBodyComesExactlyInBoundedMemoryWithOneReadyPerWait) {
  const uint64_t size = (kThreadSanitized ? 16 : 256) * kMiB + 11;
  make_client(peer_->base_url());
  humus_request* req = request(peer_->url("/bytes/" + std::to_string(size)));
  const uint64_t before = rss();
  Reader r;
  open(req, r);
  EXPECT_EQ(r.whole, 0);  // 256 MiB: the large ring
  // A reader's buffer smaller than the ring: it takes several times per batch.
  Drained d = drain(r, 24 * 1024, true);
  EXPECT_EQ(d.status, HUMUS_OK) << d.error;
  EXPECT_EQ(d.sum.bytes(), size);
  EXPECT_EQ(d.sum.value(), humus::test::pattern_checksum(size));
  EXPECT_GT(d.waits, 0u);
  EXPECT_EQ(r.ready_count(), d.waits);  // exactly one `ready` per HUMUS_TOOK_WAIT, none besides
  if (!kSanitized) {
    EXPECT_LT(std::max(d.peak_rss, rss()) - std::min(before, std::max(d.peak_rss, rss())), 8 * kMiB);
  }
  EXPECT_EQ(counts().successes, 1u);  // counted at the end, before the last take said so
  // The end is told again, and the free counts nothing more.
  char b[16];
  size_t n = 1;
  int32_t took = -1;
  EXPECT_EQ(humus_response_take(r.resp, b, sizeof b, 0, &n, &took, nullptr), HUMUS_OK);
  EXPECT_EQ(took, HUMUS_TOOK_END);
  EXPECT_EQ(n, 0u);
  humus_response_close(r.resp);
  EXPECT_EQ(counts().successes, 1u);
  std::printf("[read ahead] %llu MiB, %llu waits\n", static_cast<unsigned long long>(size / kMiB),
              static_cast<unsigned long long>(d.waits));
  humus_request_free(req);
}

TEST_F(ReadAheadPeerTest, ASmallBodyComesWholeWithItsOneReady) {
  make_client(peer_->base_url());
  // 1000 bytes, and one just under HUMUS_READ_AHEAD_WHOLE: its ring reads into the last bytes of room too.
  for (const uint64_t size : {uint64_t{1000}, uint64_t{HUMUS_READ_AHEAD_WHOLE} - 1}) {
    const std::string path = "/bytes/" + std::to_string(size);
    humus_request* req = request(peer_->url(path));
    for (int round = 0; round < 3; ++round) {  // the connection is reused: each body exactly its own
      Reader r;
      open(req, r);
      EXPECT_EQ(r.whole, 1);
      ASSERT_TRUE(r.readied(1));  // with no take waiting: the whole body is in
      std::vector<char> buf(HUMUS_READ_AHEAD_WHOLE);
      size_t n = 0;
      int32_t took = -1;
      ASSERT_EQ(humus_response_take(r.resp, buf.data(), buf.size(), 0, &n, &took, nullptr), HUMUS_OK);
      EXPECT_EQ(took, HUMUS_TOOK_LAST);  // one take: the bytes and the end
      ASSERT_EQ(n, size);
      Checksum sum;
      sum.update(reinterpret_cast<const uint8_t*>(buf.data()), n);
      EXPECT_EQ(sum.value(), humus::test::pattern_checksum(size));
      EXPECT_EQ(r.ready_count(), 1u);
      humus_response_free(r.resp);
    }
    EXPECT_EQ(peer_->count(path), 3u);
    humus_request_free(req);
  }
  EXPECT_EQ(counts().successes, 6u);
}

TEST_F(ReadAheadPeerTest, WithoutHoldingWholeABodyThatFitsIsReadToItsEndWithNoTake) {
  // 100 KiB: a ring of its length and one byte, not held whole, reads every byte of it into any room it has
  // (the end counts the result) while nobody takes.
  make_client(peer_->base_url());
  humus_request* req = request(peer_->url("/bytes/102400"));
  Reader r;
  r.hold_whole = false;
  open(req, r);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (counts().successes == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(counts().successes, 1u);  // ended in the ring, before the first take
  std::vector<char> buf(200 * 1024);
  size_t n = 0;
  int32_t took = -1;
  ASSERT_EQ(humus_response_take(r.resp, buf.data(), buf.size(), 0, &n, &took, nullptr), HUMUS_OK);
  EXPECT_EQ(took, HUMUS_TOOK_LAST);
  ASSERT_EQ(n, 102400u);
  Checksum sum;
  sum.update(reinterpret_cast<const uint8_t*>(buf.data()), n);
  EXPECT_EQ(sum.value(), humus::test::pattern_checksum(102400));
  humus_response_free(r.resp);
  humus_request_free(req);
}

TEST_F(ReadAheadServerTest, WithoutHoldingWholeASmallBodysBytesAreToldAsTheyCome) {
  // A Content-Length of 20000 (under HUMUS_READ_AHEAD_WHOLE): 16 KiB at once, the rest after 30 s. Held whole,
  // nothing could be taken before then; asked not to, the first piece is taken as it comes.
  server().script("/paced",
                  nlohmann::json::array({{{"status", 200}, {"body_size", 20000}, {"chunk_delay_ms", 30000}}}));
  make_client("http://" + server().address("http"));
  humus_request* req = request(url("/paced"));
  Reader r;
  r.hold_whole = false;
  open(req, r);
  EXPECT_EQ(r.whole, -1);  // not asked
  std::vector<char> buf(64 * 1024);
  size_t got = 0;
  uint64_t waits = 0;
  while (got < 16 * 1024) {
    size_t n = 0;
    int32_t took = -1;
    ASSERT_EQ(humus_response_take(r.resp, buf.data(), buf.size(), 0, &n, &took, nullptr), HUMUS_OK);
    ASSERT_NE(took, HUMUS_TOOK_LAST);
    ASSERT_NE(took, HUMUS_TOOK_END);
    if (took == HUMUS_TOOK_WAIT) {
      ASSERT_TRUE(r.readied(++waits));
    }
    got += n;
  }
  EXPECT_EQ(got, 16u * 1024);  // the first piece, the rest still 30 s away
  EXPECT_TRUE(std::all_of(buf.begin(), buf.begin() + 1024, [](char c) { return c == 'x'; }));
  humus_response_close(r.resp);
  EXPECT_EQ(counts().successes, 1u);  // closed before its end: counted as its 200 was classified
  humus_request_free(req);
}

// F194
TEST_F(ReadAheadPeerTest, AResetMidBodyFailsTheTakeAndCountsOneFailure) {
  make_client(peer_->base_url());
  humus_request* req = request(peer_->url("/reset/" + std::to_string(8 * kMiB) + "/" + std::to_string(kMiB)));
  Reader r;
  open(req, r);
  Drained d = drain(r, 64 * 1024);
  EXPECT_EQ(d.status, HUMUS_E_CONNECTION_LOST) << d.error;
  EXPECT_NE(d.error.find("reading the response body"), std::string::npos) << d.error;
  EXPECT_LE(d.sum.bytes(), kMiB);
  EXPECT_EQ(d.sum.value(), humus::test::pattern_checksum(d.sum.bytes()));  // what came is the body's start
  EXPECT_EQ(counts().failures, 1u);
  char b[16];
  size_t n = 0;
  int32_t took = -1;
  EXPECT_EQ(humus_response_take(r.resp, b, sizeof b, 0, &n, &took, nullptr), HUMUS_E_CONNECTION_LOST);
  humus_response_close(r.resp);
  EXPECT_EQ(counts().failures, 1u);
  EXPECT_EQ(counts().successes, 0u);
  humus_request_free(req);
}

TEST_F(ReadAheadServerTest, ManyBodiesOverHttp2EachReadByAThreadOfItsOwn) {
  const int body_size = 300 * 1024 + 5;
  server().script("/big", nlohmann::json::array({{{"status", 200}, {"body_size", body_size}}}));
  make_client("https://" + server().host_port("https"),
              R"(, "tls": {"ca_file": ")" + server().ca_file() + R"("}, "bulkhead": {"max_concurrent": 16})");
  constexpr int kBodies = 8;
  humus_request* req = request(server().url("https", "/big"));
  std::vector<std::unique_ptr<Reader>> readers;
  for (int i = 0; i < kBodies; ++i) {
    readers.push_back(std::make_unique<Reader>());
    open(req, *readers.back());
  }
  std::vector<Drained> drained(kBodies);
  std::vector<std::thread> threads;
  for (int i = 0; i < kBodies; ++i) {
    threads.emplace_back([&, i] { drained[i] = drain(*readers[i], 4096 + static_cast<size_t>(i) * 1531); });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kBodies; ++i) {
    EXPECT_EQ(drained[i].status, HUMUS_OK) << drained[i].error;
    EXPECT_EQ(drained[i].sum.bytes(), static_cast<uint64_t>(body_size));
    EXPECT_TRUE(drained[i].all_x);
    EXPECT_STREQ(humus_response_http_version(readers[i]->resp), "2");
    EXPECT_EQ(readers[i]->ready_count(), drained[i].waits);
    humus_response_free(readers[i]->resp);
  }
  EXPECT_EQ(counts().successes, static_cast<uint64_t>(kBodies));
  humus_request_free(req);
}

// F195
TEST_F(ReadAheadServerTest, AReadPendingAtTheDeadlineEndsTheTakesWithTimeout) {
  server().script("/slow", nlohmann::json::array({{{"status", 200}, {"body_size", 100}, {"body_delay_ms", 30000}}}));
  make_client("http://" + server().address("http"), "", R"("timeout": "1500ms", "attempt_timeout": "1s")");
  humus_request* req = request(url("/slow"));
  Reader r;
  open(req, r);
  EXPECT_EQ(r.whole, 1);
  Drained d = drain(r, 1024);  // the whole-body `ready` comes with the deadline's failure
  EXPECT_EQ(d.status, HUMUS_E_TIMEOUT) << d.error;
  EXPECT_NE(d.error.find("deadline"), std::string::npos) << d.error;
  EXPECT_EQ(d.sum.bytes(), 0u);
  EXPECT_EQ(counts().failures, 1u);
  humus_response_free(r.resp);
  humus_request_free(req);
}

// F196
TEST_F(ReadAheadServerTest, ACancelEndsThePendingReadAndDropsWhatCameTheBreakerIgnoresIt) {
  // Chunked (no length: not held whole): a first 16 KiB piece at once, the rest after 30 s within the call's 60 s.
  server().script("/trickle", nlohmann::json::array({{{"status", 200},
                                                       {"headers", {{"Transfer-Encoding", "chunked"}}},
                                                       {"body_size", 20000},
                                                       {"chunk_delay_ms", 30000}}}));
  make_client("http://" + server().address("http"));
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  humus_request* req = request(url("/trickle"));
  ASSERT_EQ(humus_request_set_cancel(req, cancel), HUMUS_OK);
  Reader r;
  open(req, r);
  EXPECT_EQ(r.whole, 0);
  humus_cancel_trigger(cancel);
  char b[64];
  size_t n = 0;
  int32_t took = -1;
  humus_status st = HUMUS_OK;
  uint64_t waits = 0;
  // Each take after the cancel drops what was read ahead (as a binding does once its context ended): no byte
  // comes out, and the cancelled read's outcome is what the takes end with.
  humus_error* err = nullptr;
  while ((st = humus_response_take(r.resp, b, sizeof b, HUMUS_TAKE_DROP, &n, &took, &err)) == HUMUS_OK) {
    ASSERT_EQ(took, HUMUS_TOOK_WAIT) << "bytes after the cancel: " << n;
    ASSERT_TRUE(r.readied(++waits));
  }
  EXPECT_EQ(st, HUMUS_E_CANCELLED) << (err ? humus_error_message(err) : "");
  humus_error_free(err);
  humus_response_close(r.resp);
  EXPECT_EQ(counts().successes, 0u);
  EXPECT_EQ(counts().failures, 0u);
  humus_request_free(req);
  humus_cancel_free(cancel);
}

// F198
TEST_F(ReadAheadPeerTest, ADropAfterTheBodyEndedWellSaysCancelledNotTheEnd) {
  make_client(peer_->base_url());
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  humus_request* req = request(peer_->url("/bytes/1000"));
  ASSERT_EQ(humus_request_set_cancel(req, cancel), HUMUS_OK);
  Reader r;
  open(req, r);
  ASSERT_TRUE(r.readied(1));          // held whole: all of it is in, the result counted
  EXPECT_EQ(counts().successes, 1u);
  humus_cancel_trigger(cancel);       // the caller gives up before reading it
  char b[2048];
  size_t n = 7;
  int32_t took = -1;
  humus_error* err = nullptr;
  // Dropped: the 1000 bytes are gone, so the take must not say the body ended whole.
  EXPECT_EQ(humus_response_take(r.resp, b, sizeof b, HUMUS_TAKE_DROP, &n, &took, &err), HUMUS_E_CANCELLED);
  EXPECT_EQ(n, 0u);
  EXPECT_NE(std::string(err != nullptr ? humus_error_message(err) : "").find("cancelled"), std::string::npos);
  humus_error_free(err);
  EXPECT_EQ(humus_response_take(r.resp, b, sizeof b, 0, &n, &took, nullptr), HUMUS_E_CANCELLED);  // and after
  humus_response_close(r.resp);
  EXPECT_EQ(counts().successes, 1u);  // counted once, at its end
  EXPECT_EQ(counts().failures, 0u);
  humus_request_free(req);
  humus_cancel_free(cancel);
}

// F200: the peer resets a body read ahead mid-body — a TCP RST over HTTP/1.1, RST_STREAM over HTTP/2 — and the
// next call on the client reads its own body exactly; over HTTP/2 on the same, pooled, connection.
TEST_F(ReadAheadServerTest, AResetMidBodyOverEitherProtocolFailsTheTakeAndTheNextCallIsExact) {
  for (const std::string listener : {"http", "https"}) {
    SCOPED_TRACE(listener);
    server().reset();
    server().script("/cut",
                    nlohmann::json::array({{{"status", 200}, {"body_size", 1 << 20}, {"reset", "mid_body"}}}));
    server().script("/after", nlohmann::json::array({{{"status", 200}, {"body_size", 1000}}}));
    if (listener == "http") {
      make_client("http://" + server().address("http"));
    } else {
      const std::string tls = R"(, "tls": {"ca_file": ")" + server().ca_file() + R"("})";
      make_client("https://" + server().host_port("https"), tls);
    }
    humus_request* cut = request(server().url(listener, "/cut"));
    Reader r;
    open(cut, r);
    EXPECT_EQ(r.whole, 0);  // 1 MiB: read through the ring, not held whole
    Drained d = drain(r, 64 * 1024);
    EXPECT_EQ(d.status, HUMUS_E_CONNECTION_LOST) << d.error;
    EXPECT_LT(d.sum.bytes(), uint64_t{1} << 20);  // the half body is never told as the whole
    EXPECT_TRUE(d.all_x);
    humus_response_close(r.resp);
    EXPECT_EQ(counts().failures, 1u);
    EXPECT_EQ(server().requests("/cut").size(), 1u);  // headers came: the cut body is not sent for again

    humus_request* after = request(server().url(listener, "/after"));
    Reader next;
    open(after, next);
    Drained whole = drain(next, 64 * 1024);
    EXPECT_EQ(whole.status, HUMUS_OK) << whole.error;
    EXPECT_EQ(whole.sum.bytes(), 1000u);
    EXPECT_TRUE(whole.all_x);
    humus_response_close(next.resp);
    EXPECT_EQ(counts().successes, 1u);
    const auto first = server().requests("/cut");
    const auto second = server().requests("/after");
    ASSERT_EQ(second.size(), 1u);
    if (listener == "https") {
      EXPECT_EQ(first[0]["connection"], second[0]["connection"]) << "a stream reset must not cost the connection";
    }
    humus_request_free(cut);
    humus_request_free(after);
    humus_client_free(client_);
    client_ = nullptr;
  }
}

// F197
TEST_F(ReadAheadServerTest, AClosedBodyRunsNoReadyAfterTheCloseAndCountsAsClassified) {
  server().script("/slow", nlohmann::json::array({{{"status", 200}, {"body_size", 100}, {"body_delay_ms", 5000}}}));
  make_client("http://" + server().address("http"));
  humus_request* req = request(url("/slow"));
  Reader r;
  open(req, r);
  char b[16];
  size_t n = 0;
  int32_t took = -1;
  ASSERT_EQ(humus_response_take(r.resp, b, sizeof b, 0, &n, &took, nullptr), HUMUS_OK);
  EXPECT_EQ(took, HUMUS_TOOK_WAIT);
  humus_response_close(r.resp);  // the pending read completes with kCancelled on the loop: no `ready`
  EXPECT_EQ(r.ready_count(), 0u);
  EXPECT_EQ(counts().successes, 1u);  // closed before its end: counted as its 200 was classified
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(r.ready_count(), 0u);
  humus_request_free(req);
}

TEST_F(ReadAheadServerTest, MisuseIsRefusedAndSaysWhy) {
  server().script("/small", nlohmann::json::array({{{"status", 200}, {"body_size", 10}}}));
  make_client("http://" + server().address("http"));
  humus_request* req = request(url("/small"));
  Reader r;
  open(req, r);
  char b[16];
  size_t n = 0;
  int32_t took = -1;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_response_read_ahead(r.resp, 0, &Reader::on_ready, &r, nullptr, &err), HUMUS_E_MISUSE);
  EXPECT_NE(std::string(humus_error_message(err)).find("read ahead"), std::string::npos);
  humus_error_free(err);
  err = nullptr;
  EXPECT_EQ(humus_response_read_async(r.resp, b, sizeof b, [](void*, humus_status, size_t, humus_error* e) {
              humus_error_free(e);
            }, nullptr, &err), HUMUS_E_MISUSE);
  EXPECT_NE(std::string(humus_error_message(err)).find("humus_response_take"), std::string::npos);
  humus_error_free(err);
  EXPECT_EQ(humus_response_take(r.resp, b, 0, 0, &n, &took, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_response_take(r.resp, b, sizeof b, 0, &n, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  ASSERT_TRUE(r.readied(1));
  ASSERT_EQ(humus_response_take(r.resp, b, sizeof b, 0, &n, &took, nullptr), HUMUS_OK);
  EXPECT_EQ(took, HUMUS_TOOK_LAST);
  EXPECT_EQ(n, 10u);
  humus_response_free(r.resp);
  humus_response_hurry(r.resp);  // a freed response: nothing

  // A blocking stream is not read ahead, and cannot be.
  humus_response* blocking = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &blocking, nullptr), HUMUS_OK);
  err = nullptr;
  EXPECT_EQ(humus_response_take(blocking, b, sizeof b, 0, &n, &took, &err), HUMUS_E_MISUSE);
  EXPECT_NE(std::string(humus_error_message(err)).find("not read ahead"), std::string::npos);
  humus_error_free(err);
  err = nullptr;
  EXPECT_EQ(humus_response_read_ahead(blocking, 0, &Reader::on_ready, &r, nullptr, &err), HUMUS_E_MISUSE);
  humus_error_free(err);
  EXPECT_EQ(humus_response_read_ahead(blocking, 0, nullptr, &r, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  humus_response_free(blocking);
  humus_request_free(req);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
