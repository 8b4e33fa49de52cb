// Bodies that stream (docs/bodies.md §7) through the C ABI alone, against real loopback sockets: GiB downloads and
// uploads in bounded memory, the breaker counting a streamed result at its end or close, bodies breaking
// off, unreplayable uploads sent once, decoding and its limits, and a probe slot held by an open body.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "humus_http.h"
#include "support/sanitizers.h"
#include "support/stream_peer.h"
#include "support/test_server.h"

namespace {
namespace HUMUS_UNITY_ID {

using humus::test::Checksum;
using humus::test::StreamPeer;
using std::chrono::milliseconds;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

using humus::test::kSanitized;
using humus::test::kThreadSanitized;

// Resident memory now, and the peak since the last reset_peak(), in bytes (Linux /proc).
uint64_t status_field(const char* name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(name);
  while (std::getline(in, line)) {
    if (line.compare(0, len, name) == 0) return std::stoull(line.substr(len + 1)) * 1024;
  }
  return 0;
}
uint64_t rss() { return status_field("VmRSS"); }
// CPU seconds (user + system) of the calling thread, or of the waited-for children.
double cpu_seconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
uint64_t peak() { return status_field("VmHWM"); }
bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// Tracks the peak resident memory of a stretch of code: the kernel's own peak when it can be reset, else
// samples taken by the caller.
class MemoryWatch {
 public:
  MemoryWatch() : start_(rss()), kernel_peak_(reset_peak()), sampled_(start_) {}
  void sample() { sampled_ = std::max(sampled_, rss()); }
  uint64_t growth() {
    sample();
    const uint64_t top = kernel_peak_ ? std::max(peak(), sampled_) : sampled_;
    return top > start_ ? top - start_ : 0;
  }

 private:
  uint64_t start_;
  bool kernel_peak_;
  uint64_t sampled_;
};

struct Reader {
  uint64_t length = 0;
  uint64_t at = 0;
  int reads = 0;
  int rewinds = 0;
  int destroyed = 0;
  bool fail_at_half = false;
};

humus_status reader_read(void* user, void* buf, size_t cap, size_t* n) {
  auto* r = static_cast<Reader*>(user);
  ++r->reads;
  if (r->fail_at_half && r->at >= r->length / 2) return HUMUS_E_CALLBACK;
  const size_t k = static_cast<size_t>(std::min<uint64_t>(cap, r->length - r->at));
  humus::test::pattern_fill(r->at, static_cast<uint8_t*>(buf), k);
  r->at += k;
  *n = k;
  return HUMUS_OK;
}
humus_status reader_rewind(void* user) {
  auto* r = static_cast<Reader*>(user);
  ++r->rewinds;
  r->at = 0;
  return HUMUS_OK;
}
void reader_destroy(void* user) { ++static_cast<Reader*>(user)->destroyed; }

class StreamCapiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { peer_ = new StreamPeer(); }
  static void TearDownTestSuite() {
    delete peer_;
    peer_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt_, nullptr), HUMUS_OK); }
  void TearDown() override {
    humus_client_free(client_);
    humus_runtime_free(rt_);
  }

  void make_client(const std::string& base_url, const std::string& extra = "",
                   const std::string& timeouts = R"("timeout": "60s", "attempt_timeout": "30s")") {
    const std::string json = R"({"base_url": ")" + base_url + R"(", )" + timeouts +
                             R"(, "backoff_base": "1ms", "backoff_max": "2ms")" + extra + "}";
    humus_settings* s = nullptr;
    humus_error* err = nullptr;
    ASSERT_EQ(humus_settings_from_json(json.data(), json.size(), &s, &err), HUMUS_OK)
        << (err ? humus_error_message(err) : "");
    ASSERT_EQ(humus_client_new(rt_, s, &client_, nullptr), HUMUS_OK);
    humus_settings_free(s);
  }

  humus_request* request(const char* method, const std::string& url) {
    humus_request* r = nullptr;
    EXPECT_EQ(humus_request_new(method, url.c_str(), &r, nullptr), HUMUS_OK);
    return r;
  }

  humus_breaker_counts counts() {
    humus_breaker_counts c = HUMUS_BREAKER_COUNTS_INIT;
    EXPECT_EQ(humus_client_breaker_counts(client_, &c), HUMUS_OK);
    return c;
  }

  static StreamPeer* peer_;
  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
};

StreamPeer* StreamCapiTest::peer_ = nullptr;

TEST_F(StreamCapiTest, OneGibDownloadStreamsInBoundedMemoryAndCountsAtTheEnd) {
  if (kThreadSanitized) GTEST_SKIP() << "a gigabyte under TSan nears the test's timeout; the other builds read it";
  make_client(peer_->base_url());
  humus_request* req = request("GET", peer_->url("/bytes/" + std::to_string(kGiB)));
  MemoryWatch memory;
  const auto started = std::chrono::steady_clock::now();
  const double cpu_before = cpu_seconds(RUSAGE_THREAD);
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, &err), HUMUS_OK) << (err ? humus_error_message(err) : "");
  EXPECT_EQ(humus_response_status(resp), 200);
  EXPECT_STREQ(humus_response_header(resp, "Content-Length"), std::to_string(kGiB).c_str());
  EXPECT_EQ(counts().successes, 0u);  // not counted before the body ends

  std::vector<char> buf(64 * 1024);
  Checksum sum;
  size_t n = 0;
  for (uint64_t reads = 0;; ++reads) {
    ASSERT_EQ(humus_response_read(resp, buf.data(), buf.size(), &n, nullptr), HUMUS_OK);
    if (n == 0) break;
    sum.update(reinterpret_cast<const uint8_t*>(buf.data()), n);
    if (reads % 1024 == 0) memory.sample();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double cpu = cpu_seconds(RUSAGE_THREAD) - cpu_before;  // the reading thread's, checksum included
  const uint64_t growth = memory.growth();
  EXPECT_EQ(sum.bytes(), kGiB);
  EXPECT_EQ(sum.value(), humus::test::pattern_checksum(kGiB));
  if (!kSanitized) {
    EXPECT_LT(growth, 8 * kMiB);
  }
  EXPECT_EQ(counts().successes, 1u);  // read to the end: counted once
  ASSERT_EQ(humus_response_read(resp, buf.data(), buf.size(), &n, nullptr), HUMUS_OK);
  EXPECT_EQ(n, 0u);
  humus_response_free(resp);
  EXPECT_EQ(counts().successes, 1u);  // freeing an ended body counts nothing more
  std::printf("[stream] 1 GiB in %.2f s (%.0f MiB/s), reader CPU %.2f s, RSS growth %.2f MiB\n", seconds,
              1024 / seconds, cpu, static_cast<double>(growth) / static_cast<double>(kMiB));
  humus_request_free(req);
}

// The anchor for the download's throughput: curl itself into /dev/null from the same peer. Run by hand
// (--gtest_also_run_disabled_tests): it needs the curl program and prints a ratio, never fails on time.
TEST_F(StreamCapiTest, DISABLED_CurlBaselineForTheOneGibDownload) {
  const std::string command = "curl -s -o /dev/null -w '%{size_download} %{time_total}' " +
                              peer_->url("/bytes/" + std::to_string(kGiB));
  const double cpu_before = cpu_seconds(RUSAGE_CHILDREN);
  FILE* p = popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char out[128] = {};
  const size_t got = std::fread(out, 1, sizeof out - 1, p);
  pclose(p);
  out[got] = '\0';
  double bytes = 0, seconds = 0;
  ASSERT_EQ(std::sscanf(out, "%lf %lf", &bytes, &seconds), 2) << out;
  std::printf("[stream] curl -o /dev/null: 1 GiB in %.2f s (%.0f MiB/s), curl CPU %.2f s\n", seconds,
              bytes / kMiB / seconds, cpu_seconds(RUSAGE_CHILDREN) - cpu_before);
}

TEST_F(StreamCapiTest, OneGibUploadFromAReader) {
  if (kThreadSanitized) GTEST_SKIP() << "a gigabyte under TSan nears the test's timeout; the other builds send it";
  make_client(peer_->base_url());
  Reader reader;
  reader.length = kGiB;
  humus_body_reader table = HUMUS_BODY_READER_INIT;
  table.user_data = &reader;
  table.length = static_cast<int64_t>(kGiB);
  table.read = reader_read;
  table.rewind = reader_rewind;
  table.destroy = reader_destroy;
  humus_request* req = request("PUT", peer_->url("/upload"));
  ASSERT_EQ(humus_request_set_body_reader(req, &table, nullptr), HUMUS_OK);
  MemoryWatch memory;
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, &err), HUMUS_OK) << (err ? humus_error_message(err) : "");
  EXPECT_EQ(humus_response_status(resp), 200);
  const void* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_response_body(resp, &data, &len, nullptr), HUMUS_OK);
  EXPECT_EQ(std::string(static_cast<const char*>(data), len),
            std::to_string(kGiB) + " " + std::to_string(humus::test::pattern_checksum(kGiB)));
  if (!kSanitized) {
    EXPECT_LT(memory.growth(), 8 * kMiB);
  }
  EXPECT_EQ(reader.rewinds, 0);
  EXPECT_FALSE(peer_->records().back().chunked);
  humus_response_free(resp);
  EXPECT_EQ(reader.destroyed, 0);
  humus_request_free(req);
  EXPECT_EQ(reader.destroyed, 1);  // once, when the request no longer needs it
}

TEST_F(StreamCapiTest, UploadOfUnknownLengthIsChunked) {
  make_client(peer_->base_url());
  Reader reader;
  reader.length = 5 * kMiB + 3;
  humus_body_reader table = HUMUS_BODY_READER_INIT;
  table.user_data = &reader;
  table.read = reader_read;  // length -1 from the INIT macro
  humus_request* req = request("POST", peer_->url("/upload"));
  ASSERT_EQ(humus_request_set_body_reader(req, &table, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  const void* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_response_body(resp, &data, &len, nullptr), HUMUS_OK);
  EXPECT_EQ(std::string(static_cast<const char*>(data), len),
            std::to_string(reader.length) + " " + std::to_string(humus::test::pattern_checksum(reader.length)));
  EXPECT_TRUE(peer_->records().back().chunked);
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(StreamCapiTest, UnreplayableUploadIsSentOnceEvenForPut) {
  make_client(peer_->base_url(), R"(, "max_attempts": 3)");
  Reader reader;
  reader.length = 100000;
  humus_body_reader table = HUMUS_BODY_READER_INIT;
  table.user_data = &reader;
  table.length = 100000;
  table.read = reader_read;  // no rewind: not replayable
  table.destroy = reader_destroy;
  humus_request* req = request("PUT", peer_->url("/status/503"));
  ASSERT_EQ(humus_request_set_body_reader(req, &table, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 503);  // returned as it came, not retried
  EXPECT_EQ(humus_response_attempts(resp), 1);
  EXPECT_EQ(peer_->count("/status/503"), 1u);
  humus_response_free(resp);
  // A second call cannot send a body already read.
  humus_error* err = nullptr;
  EXPECT_EQ(humus_client_do(client_, req, &resp, &err), HUMUS_E_MISUSE);
  humus_error_free(err);
  EXPECT_EQ(peer_->count("/status/503"), 1u);
  humus_request_free(req);
  EXPECT_EQ(reader.destroyed, 1);
}

TEST_F(StreamCapiTest, ReplayableUploadIsRewoundForEachRetry) {
  make_client(peer_->base_url(), R"(, "max_attempts": 3)");
  Reader reader;
  reader.length = 100000;
  humus_body_reader table = HUMUS_BODY_READER_INIT;
  table.user_data = &reader;
  table.length = 100000;
  table.read = reader_read;
  table.rewind = reader_rewind;
  humus_request* req = request("PUT", peer_->url("/status/502"));
  ASSERT_EQ(humus_request_set_body_reader(req, &table, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_attempts(resp), 3);
  EXPECT_EQ(reader.rewinds, 2);
  for (const auto& r : peer_->records()) {
    if (r.path == "/status/502") {
      EXPECT_EQ(r.body_checksum, humus::test::pattern_checksum(100000));
    }
  }
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(StreamCapiTest, AFailingReaderFailsTheAttemptWithCallback) {
  make_client(peer_->base_url(), R"(, "max_attempts": 3)");
  Reader reader;
  reader.length = 4 * kMiB;
  reader.fail_at_half = true;
  humus_body_reader table = HUMUS_BODY_READER_INIT;
  table.user_data = &reader;
  table.length = static_cast<int64_t>(reader.length);
  table.read = reader_read;
  humus_request* req = request("POST", peer_->url("/upload"));
  ASSERT_EQ(humus_request_set_body_reader(req, &table, nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, &err), HUMUS_E_CALLBACK);
  EXPECT_EQ(humus_error_attempts(err), 1);
  humus_error_free(err);
  humus_request_free(req);
}

TEST_F(StreamCapiTest, BodyReaderTableIsChecked) {
  humus_request* req = request("POST", peer_->url("/upload"));
  humus_body_reader table = HUMUS_BODY_READER_INIT;
  EXPECT_EQ(humus_request_set_body_reader(req, &table, nullptr), HUMUS_E_PROGRAM);  // read is NULL
  table.read = reader_read;
  table.version = 99;
  EXPECT_EQ(humus_request_set_body_reader(req, &table, nullptr), HUMUS_E_INVALID_ARGUMENT);
  table.version = HUMUS_BODY_READER_VERSION;
  table.length = -2;
  EXPECT_EQ(humus_request_set_body_reader(req, &table, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_request_set_body_reader(nullptr, &table, nullptr), HUMUS_E_MISUSE);  // NULL is no handle
  humus_request_free(req);
}

TEST_F(StreamCapiTest, EarlyCloseCountsTheResultAsClassified) {
  make_client(peer_->base_url());
  std::vector<char> buf(16 * 1024);
  size_t n = 0;
  {
    humus_request* req = request("GET", peer_->url("/bytes/" + std::to_string(64 * kMiB)));
    humus_response* resp = nullptr;
    ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
    ASSERT_EQ(humus_response_read(resp, buf.data(), buf.size(), &n, nullptr), HUMUS_OK);
    EXPECT_GT(n, 0u);
    EXPECT_EQ(counts().successes, 0u);
    humus_response_free(resp);  // closed before its end
    EXPECT_EQ(counts().successes, 1u);
    EXPECT_EQ(counts().failures, 0u);
    humus_request_free(req);
  }
  {
    humus_request* req = request("GET", peer_->url("/status/500"));
    humus_response* resp = nullptr;
    ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
    EXPECT_EQ(humus_response_status(resp), 500);
    EXPECT_EQ(counts().failures, 0u);
    humus_response_free(resp);  // a 500 is a breaker failure, counted when closed
    EXPECT_EQ(counts().failures, 1u);
    humus_request_free(req);
  }
  // The connection of the closed 64 MiB body was not reused: the next call still works.
  humus_request* req = request("GET", peer_->url("/bytes/10"));
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  const void* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_response_body(resp, &data, &len, nullptr), HUMUS_OK);
  EXPECT_EQ(len, 10u);
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(StreamCapiTest, MidBodyResetIsABreakerFailure) {
  make_client(peer_->base_url());
  humus_request* req = request("GET", peer_->url("/reset/" + std::to_string(8 * kMiB) + "/" + std::to_string(kMiB)));
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  std::vector<char> buf(64 * 1024);
  size_t n = 0;
  uint64_t total = 0;
  humus_status st = HUMUS_OK;
  humus_error* err = nullptr;
  while ((st = humus_response_read(resp, buf.data(), buf.size(), &n, &err)) == HUMUS_OK && n > 0) total += n;
  EXPECT_EQ(st, HUMUS_E_CONNECTION_LOST) << (err ? humus_error_message(err) : "");
  humus_error_free(err);
  EXPECT_LE(total, kMiB);
  EXPECT_EQ(counts().failures, 1u);
  EXPECT_EQ(counts().successes, 0u);
  EXPECT_EQ(humus_response_read(resp, buf.data(), buf.size(), &n, nullptr), HUMUS_E_CONNECTION_LOST);
  humus_response_free(resp);
  EXPECT_EQ(counts().failures, 1u);  // counted once
  humus_request_free(req);
}

// Reads a streamed body to its end or its failure in pieces of `cap`: its bytes and checksum, and the status
// that ended it.
struct ReadOut {
  Checksum sum;
  humus_status status = HUMUS_OK;
  std::string error;  // the failure's message
};
ReadOut read_all(humus_response* resp, size_t cap) {
  ReadOut out;
  std::vector<char> buf(cap);
  size_t n = 0;
  humus_error* err = nullptr;
  while ((out.status = humus_response_read(resp, buf.data(), buf.size(), &n, &err)) == HUMUS_OK && n > 0) {
    out.sum.update(reinterpret_cast<const uint8_t*>(buf.data()), n);
  }
  if (err != nullptr) out.error = humus_error_message(err);
  humus_error_free(err);
  return out;
}

// A peer that closes cleanly short of its Content-Length: every byte it sent reaches the reader, in order, also
// the ones the transport kept past the reader's buffer (BodySink::kKeepAhead), and only then the failure —
// counted once, the request sent once. Read while libcurl finds the socket full (it reads it several times in one
// pass), in pieces that do not divide the writes.
TEST_F(StreamCapiTest, ABodyCutShortHandsOverEveryByteSentThenConnectionLost) {
  make_client(peer_->base_url());
  const uint64_t sent = 3 * kMiB + 12'345;
  for (const size_t cap : {size_t{10'000}, size_t{64 * 1024}}) {
    const std::string path = "/cut/" + std::to_string(8 * kMiB) + "/" + std::to_string(sent) + "?cap=" +
                             std::to_string(cap);
    humus_request* req = request("GET", peer_->url(path));
    humus_response* resp = nullptr;
    ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the peer has sent all and closed
    const ReadOut out = read_all(resp, cap);
    EXPECT_EQ(out.status, HUMUS_E_CONNECTION_LOST) << "cap " << cap << ": " << out.error;
    EXPECT_EQ(out.sum.bytes(), sent) << "cap " << cap;
    EXPECT_EQ(out.sum.value(), humus::test::pattern_checksum(sent)) << "cap " << cap;
    humus_response_free(resp);
    humus_request_free(req);
    EXPECT_EQ(peer_->count(path), 1u) << "cap " << cap;
  }
  EXPECT_EQ(counts().failures, 2u);
  EXPECT_EQ(counts().successes, 0u);
}

// A peer that sends more than its Content-Length announced: the surplus is not the start of the next answer.
// The connection it came on is never used again, so the next call on the client gets exactly what its own
// answer holds — streamed or buffered, the late call first read to its end or closed early.
// F73
TEST_F(StreamCapiTest, BytesPastContentLengthNeverReachTheNextCall) {
  make_client(peer_->base_url());
  const uint64_t announced = 100'003;
  const std::string late = "/late/" + std::to_string(announced) + "/" + std::to_string(300 * 1024);
  const std::string next = "/bytes/1000";
  for (const int how : {0, 1, 2}) {  // streamed to its end, buffered, closed before its end
    SCOPED_TRACE(how == 0 ? "streamed" : how == 1 ? "buffered" : "closed early");
    humus_request* req = request("GET", peer_->url(late));
    humus_response* resp = nullptr;
    if (how == 1) {
      ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
      const void* data = nullptr;
      size_t len = 0;
      ASSERT_EQ(humus_response_body(resp, &data, &len, nullptr), HUMUS_OK);
      Checksum sum;
      sum.update(static_cast<const uint8_t*>(data), len);
      EXPECT_EQ(sum.bytes(), announced);
      EXPECT_EQ(sum.value(), humus::test::pattern_checksum(announced));
    } else {
      ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
      std::this_thread::sleep_for(milliseconds(50));  // the surplus is on the wire
      if (how == 0) {
        const ReadOut out = read_all(resp, 16 * 1024);
        EXPECT_EQ(out.status, HUMUS_OK) << out.error;
        EXPECT_EQ(out.sum.bytes(), announced);
        EXPECT_EQ(out.sum.value(), humus::test::pattern_checksum(announced));
      } else {
        char first[1000];
        size_t n = 0;
        ASSERT_EQ(humus_response_read(resp, first, sizeof first, &n, nullptr), HUMUS_OK);
      }
    }
    humus_response_free(resp);
    humus_request_free(req);

    humus_request* again = request("GET", peer_->url(next));
    humus_response* answer = nullptr;
    humus_error* err = nullptr;
    ASSERT_EQ(humus_client_do(client_, again, &answer, &err), HUMUS_OK)
        << (err ? humus_error_message(err) : "");
    const void* data = nullptr;
    size_t len = 0;
    ASSERT_EQ(humus_response_body(answer, &data, &len, nullptr), HUMUS_OK);
    Checksum sum;
    sum.update(static_cast<const uint8_t*>(data), len);
    EXPECT_EQ(sum.bytes(), 1000u);
    EXPECT_EQ(sum.value(), humus::test::pattern_checksum(1000));
    humus_response_free(answer);
    humus_request_free(again);
  }
  EXPECT_EQ(peer_->count(late), 3u);
  EXPECT_EQ(peer_->count(next), 3u);
  EXPECT_EQ(counts().failures, 0u);
}

TEST_F(StreamCapiTest, CancelMidBodyIsIgnoredByTheBreaker) {
  make_client(peer_->base_url());
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  humus_request* req = request("GET", peer_->url("/bytes/" + std::to_string(64 * kMiB)));
  humus_request_set_cancel(req, cancel);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  std::vector<char> buf(16 * 1024);
  size_t n = 0;
  ASSERT_EQ(humus_response_read(resp, buf.data(), buf.size(), &n, nullptr), HUMUS_OK);
  humus_cancel_trigger(cancel);
  EXPECT_EQ(humus_response_read(resp, buf.data(), buf.size(), &n, nullptr), HUMUS_E_CANCELLED);
  humus_response_free(resp);
  EXPECT_EQ(counts().successes, 0u);
  EXPECT_EQ(counts().failures, 0u);
  humus_request_free(req);
  humus_cancel_free(cancel);
}

TEST_F(StreamCapiTest, TheCallTimeoutCutsASlowReader) {
  // The deadline leaves a loaded machine ample time for the head and a first read; the reader then sleeps
  // past it (a lower bound, which load only lengthens).
  make_client(peer_->base_url(), "", R"("timeout": "2s", "attempt_timeout": "2s", "connect_timeout": "2s")");
  humus_request* req = request("GET", peer_->url("/bytes/" + std::to_string(64 * kMiB)));
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  std::vector<char> buf(16 * 1024);
  size_t n = 0;
  ASSERT_EQ(humus_response_read(resp, buf.data(), buf.size(), &n, nullptr), HUMUS_OK);
  std::this_thread::sleep_for(milliseconds(2100));
  EXPECT_EQ(humus_response_read(resp, buf.data(), buf.size(), &n, nullptr), HUMUS_E_TIMEOUT);
  EXPECT_EQ(counts().failures, 1u);
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(StreamCapiTest, ResponseBodyOfAStreamReadsTheRestWithinTheLimit) {
  make_client(peer_->base_url());
  humus_request* req = request("GET", peer_->url("/bytes/300000"));
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  char first[1000];
  size_t n = 0;
  ASSERT_EQ(humus_response_read(resp, first, sizeof first, &n, nullptr), HUMUS_OK);
  ASSERT_GT(n, 0u);
  const void* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_response_body(resp, &data, &len, nullptr), HUMUS_OK);
  EXPECT_EQ(len + n, 300000u);  // the bytes not read yet
  Checksum sum;
  sum.update(reinterpret_cast<const uint8_t*>(first), n);
  sum.update(static_cast<const uint8_t*>(data), len);
  EXPECT_EQ(sum.value(), humus::test::pattern_checksum(300000));
  EXPECT_EQ(counts().successes, 1u);
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(StreamCapiTest, BufferedCallsReadThroughResponseReadToo) {
  make_client(peer_->base_url());
  humus_request* req = request("GET", peer_->url("/bytes/100000"));
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  std::vector<char> buf(7000);
  Checksum sum;
  size_t n = 0;
  while (humus_response_read(resp, buf.data(), buf.size(), &n, nullptr) == HUMUS_OK && n > 0) {
    sum.update(reinterpret_cast<const uint8_t*>(buf.data()), n);
  }
  EXPECT_EQ(sum.value(), humus::test::pattern_checksum(100000));
  EXPECT_EQ(humus_response_read(resp, buf.data(), 0, &n, nullptr), HUMUS_E_INVALID_ARGUMENT);
  humus_response_free(resp);
  humus_request_free(req);
}

// --- Against the Python test server: gzip, and the breaker's probe slot. -----------------------------------

class StreamServerCapiTest : public humus::test::WithTestServer {
 protected:
  void SetUp() override {
    WithTestServer::SetUp();
    ASSERT_EQ(humus_runtime_new(nullptr, 0, &rt_, nullptr), HUMUS_OK);
  }
  void TearDown() override {
    humus_client_free(client_);
    humus_runtime_free(rt_);
  }
  // A long deadline: decoding 256 MiB in a debug build on a loaded machine took over 30 s.
  void make_client(const std::string& extra = "") {
    const std::string json = R"({"base_url": "http://)" + server().address("http") + R"(", "timeout": "90s",
        "attempt_timeout": "20s")" + extra + "}";
    humus_settings* s = nullptr;
    humus_error* err = nullptr;
    ASSERT_EQ(humus_settings_from_json(json.data(), json.size(), &s, &err), HUMUS_OK)
        << (err ? humus_error_message(err) : "");
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
  int32_t state() {
    int32_t s = -1;
    EXPECT_EQ(humus_client_breaker_state(client_, &s), HUMUS_OK);
    return s;
  }

  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
};

// F59, S15
TEST_F(StreamServerCapiTest, GzipBombStopsAtMaxResponseBodyWithTooLarge) {
  server().script("/bomb", nlohmann::json::array({{{"status", 200}, {"gzip_bomb", 256 * 1024 * 1024}}}));
  make_client(R"(, "max_attempts": 3)");
  humus_request* req = request("/bomb");
  MemoryWatch memory;
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, &err), HUMUS_E_TOO_LARGE);
  EXPECT_EQ(humus_error_attempts(err), 1);  // not retried
  EXPECT_NE(std::string(humus_error_message(err)).find("max_response_body"), std::string::npos);
  humus_error_free(err);
  const uint64_t growth = memory.growth();
  if (!kSanitized) {
    EXPECT_LT(growth, 64 * kMiB + 16 * kMiB);  // the 64 MiB cap plus a buffer, never the 256 MiB
  }
  std::printf("[stream] gzip bomb refused at the cap, RSS growth %.1f MiB\n",
              static_cast<double>(growth) / static_cast<double>(kMiB));
  const humus_breaker_counts c = counts();
  EXPECT_EQ(c.successes + c.failures, 0u);  // no breaker verdict
  EXPECT_EQ(server().requests("/bomb").size(), 1u);
  humus_request_free(req);
}

TEST_F(StreamServerCapiTest, BodiesAreDecodedAndTheirEncodingHeadersRemoved) {
  server().script("/gz", nlohmann::json::array({{{"status", 200}, {"gzip_bomb", 1000000}}}));
  make_client();
  humus_request* req = request("/gz");
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  const void* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_response_body(resp, &data, &len, nullptr), HUMUS_OK);
  EXPECT_EQ(len, 1000000u);
  EXPECT_EQ(std::string(static_cast<const char*>(data), len), std::string(1000000, '\0'));
  EXPECT_EQ(humus_response_header(resp, "Content-Encoding"), nullptr);
  EXPECT_EQ(humus_response_header(resp, "Content-Length"), nullptr);
  humus_response_free(resp);
  const auto sent = server().requests("/gz");
  ASSERT_EQ(sent.size(), 1u);
  std::string accept;
  int accept_lines = 0;
  for (const auto& h : sent[0]["headers"]) {
    if (h[0] == "accept-encoding") {
      accept = h[1];
      ++accept_lines;
    }
  }
  // One line: the client's own (curl_easy.cc), with libcurl's left out.
  EXPECT_EQ(accept_lines, 1);
  EXPECT_NE(accept.find("gzip"), std::string::npos) << accept;
  EXPECT_NE(accept.find("deflate"), std::string::npos) << accept;

  // Streamed, the same decoded bytes.
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  std::vector<char> buf(10000);
  size_t n = 0;
  uint64_t total = 0;
  bool zeros = true;
  while (humus_response_read(resp, buf.data(), buf.size(), &n, nullptr) == HUMUS_OK && n > 0) {
    total += n;
    for (size_t i = 0; i < n; ++i) zeros = zeros && buf[i] == 0;
  }
  EXPECT_EQ(total, 1000000u);
  EXPECT_TRUE(zeros);
  humus_response_free(resp);
  humus_request_free(req);

  // A HEAD asks for no coding (its body would be empty): the line goes, and comes back for the next GET.
  server().script("/plain", nlohmann::json::array({{{"status", 200}, {"body", "plain"}}}));
  for (const char* method : {"HEAD", "GET"}) {
    humus_request* plain = nullptr;
    ASSERT_EQ(humus_request_new(method, server().url("http", "/plain").c_str(), &plain, nullptr), HUMUS_OK);
    ASSERT_EQ(humus_client_do(client_, plain, &resp, nullptr), HUMUS_OK);
    humus_response_free(resp);
    humus_request_free(plain);
  }
  const auto plain = server().requests("/plain");
  ASSERT_EQ(plain.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    int lines = 0;
    for (const auto& h : plain[i]["headers"]) lines += h[0] == "accept-encoding" ? 1 : 0;
    EXPECT_EQ(lines, i == 0 ? 0 : 1) << plain[i]["method"];
  }
}

// Streamed, a decoded body is not bounded by max_response_body but by the reader. libcurl 7.88 holds all
// that one socket read decodes to while the transfer is paused, in a buffer it grows by doubling and refuses
// beyond 64 MiB. A deflate stream inflates at most about 1032:1, so one 32 KiB read (the transport's
// CURLOPT_BUFFERSIZE) is at most 33 MiB decoded: memory is bounded by that, not by the body's size. Here
// 256 MiB decoded in under half of it (measured 96 MiB; 48 with 16 KiB reads, which cost every stream about
// a third more CPU per byte). Smaller reads (1 KiB) measured 2 MiB, but the size cannot change once a
// transfer started and costs every stream ~3x the CPU per byte.
TEST_F(StreamServerCapiTest, AStreamedGzipBombIsReadInMemoryBoundedByLibcurlsPauseBuffer) {
  if (kSanitized) GTEST_SKIP() << "a memory bound and 256 MiB within the call's timeout: the plain build runs it";
  server().script("/bomb", nlohmann::json::array({{{"status", 200}, {"gzip_bomb", 256 * 1024 * 1024}}}));
  make_client();
  humus_request* req = request("/bomb");
  MemoryWatch memory;
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  std::vector<char> buf(64 * 1024);
  size_t n = 0;
  uint64_t total = 0;
  for (int i = 0; humus_response_read(resp, buf.data(), buf.size(), &n, nullptr) == HUMUS_OK && n > 0; ++i) {
    total += n;
    if (i % 64 == 0) memory.sample();
  }
  const uint64_t growth = memory.growth();
  EXPECT_EQ(total, 256u * kMiB);
  EXPECT_LT(growth, 128 * kMiB);
  std::printf("[stream] streamed gzip bomb: 256 MiB decoded, RSS growth %.1f MiB\n",
              static_cast<double>(growth) / static_cast<double>(kMiB));
  humus_response_free(resp);
  humus_request_free(req);
}

TEST_F(StreamServerCapiTest, ACallersOwnAcceptEncodingGetsTheRawBytes) {
  server().script("/gz", nlohmann::json::array({{{"status", 200}, {"gzip_bomb", 1000000}}}));
  make_client();
  humus_request* req = request("/gz");
  ASSERT_EQ(humus_request_set_header(req, "Accept-Encoding", "gzip", nullptr), HUMUS_OK);
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, nullptr), HUMUS_OK);
  const void* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_response_body(resp, &data, &len, nullptr), HUMUS_OK);
  EXPECT_LT(len, 100000u);  // the compressed bytes, as sent
  ASSERT_GE(len, 2u);
  EXPECT_EQ(static_cast<const unsigned char*>(data)[0], 0x1f);  // gzip magic
  EXPECT_STREQ(humus_response_header(resp, "Content-Encoding"), "gzip");
  EXPECT_NE(humus_response_header(resp, "Content-Length"), nullptr);
  humus_response_free(resp);
  humus_request_free(req);
}

// docs/bodies.md §7: a replaced response's body is read (up to 64 KiB) before the retry; a longer one is not retried
// and comes back intact, still streaming.
TEST_F(StreamServerCapiTest, AStreamedCallRetriesThroughASmallBodyAndReturnsALargeOneIntact) {
  server().script("/retry", nlohmann::json::array({{{"status", 503}, {"body_size", 1000}},
                                                   {{"status", 200}, {"body_size", 10}}}));
  server().script("/large", nlohmann::json::array({{{"status", 503}, {"body_size", 100000}}}));
  make_client(R"(, "max_attempts": 3, "backoff_base": "1ms", "backoff_max": "2ms")");
  humus_request* req = request("/retry");
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 200);
  EXPECT_EQ(humus_response_attempts(resp), 2);
  EXPECT_EQ(counts().failures, 1u);   // the replaced 503, counted before the retry
  EXPECT_EQ(counts().successes, 0u);  // the 200's body is not read yet
  const void* data = nullptr;
  size_t len = 0;
  ASSERT_EQ(humus_response_body(resp, &data, &len, nullptr), HUMUS_OK);
  EXPECT_EQ(len, 10u);
  EXPECT_EQ(counts().successes, 1u);
  humus_response_free(resp);
  humus_request_free(req);

  req = request("/large");
  ASSERT_EQ(humus_client_open(client_, req, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 503);
  EXPECT_EQ(humus_response_attempts(resp), 1);
  std::vector<char> buf(4096);
  size_t n = 0;
  uint64_t total = 0;
  while (humus_response_read(resp, buf.data(), buf.size(), &n, nullptr) == HUMUS_OK && n > 0) {
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(buf[i], 'x');
    total += n;
  }
  EXPECT_EQ(total, 100000u);
  humus_response_free(resp);
  EXPECT_EQ(server().requests("/large").size(), 1u);
  humus_request_free(req);
}

TEST_F(StreamServerCapiTest, AnOpenBodyHoldsAProbeSlotForAtMostProbeTimeout) {
  server().script("/fail", nlohmann::json::array({{{"status", 500}}}));
  server().script("/big", nlohmann::json::array({{{"status", 200}, {"body_size", 4 * 1024 * 1024}}}));
  make_client(R"(, "max_attempts": 1, "breaker": {"open_for": "200ms", "probes": 1, "probe_timeout": "5s"},
      "trip": {"consecutive_failures": 2}, "probe": {"successes_to_close": 1})");
  humus_response* resp = nullptr;
  humus_request* fail = request("/fail");
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(humus_client_do(client_, fail, &resp, nullptr), HUMUS_OK);
    humus_response_free(resp);
  }
  // Tripped: open, or already half-open on a machine slow enough to let the 200 ms pass before this reads it.
  ASSERT_NE(state(), HUMUS_CIRCUIT_CLOSED);
  std::this_thread::sleep_for(milliseconds(250));  // past open_for: a lower bound, which load only lengthens
  ASSERT_EQ(state(), HUMUS_CIRCUIT_HALF_OPEN);

  humus_request* big = request("/big");
  humus_response* open_body = nullptr;
  ASSERT_EQ(humus_client_open(client_, big, &open_body, nullptr), HUMUS_OK);  // the probe, body left open
  humus_error* err = nullptr;
  EXPECT_EQ(humus_client_do(client_, big, &resp, &err), HUMUS_E_REJECTED);  // its slot is taken
  EXPECT_GT(humus_error_retry_after_ms(err), 0);
  humus_error_free(err);

  // The slot was taken for the probe_timeout's 5 s, far longer than any machine takes between the probe and
  // the call turned away; past them, it is freed.
  std::this_thread::sleep_for(milliseconds(5100));
  ASSERT_EQ(humus_client_do(client_, big, &resp, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_response_status(resp), 200);
  humus_response_free(resp);
  EXPECT_EQ(state(), HUMUS_CIRCUIT_CLOSED);  // the second probe's success closed it
  humus_response_free(open_body);            // a stale result: changes nothing
  EXPECT_EQ(state(), HUMUS_CIRCUIT_CLOSED);
  EXPECT_EQ(counts().failures, 0u);
  humus_request_free(big);
  humus_request_free(fail);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
