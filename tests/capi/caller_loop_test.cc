// A runtime whose event loop its caller drives ("loop": "caller", humus_runtime_loop_fd and
// humus_runtime_loop_run; docs/bindings.md §17.1), through the C ABI alone against the real test server:
// calls submitted from several threads complete on the driving thread and nowhere else, nothing is sent until
// the loop is driven, a timer-only deadline fires from *next_us alone, and the functions that wait for the
// loop (humus_response_close, humus_client_free with calls in flight) drive it themselves when no one else
// does.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "humus_http.h"
#include "support/test_server.h"

namespace {
namespace HUMUS_UNITY_ID {

using std::chrono::milliseconds;

// Every outcome of one test: the statuses, and the threads the completions ran on.
struct Outcomes {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<humus_status> statuses;
  std::vector<int32_t> http_statuses;
  std::vector<std::thread::id> threads;

  static void on_done(void* user, humus_status status, humus_response* resp, humus_error* err) {
    auto* o = static_cast<Outcomes*>(user);
    {
      std::lock_guard<std::mutex> lock(o->mu);
      o->statuses.push_back(status);
      o->http_statuses.push_back(resp != nullptr ? humus_response_status(resp) : 0);
      o->threads.push_back(std::this_thread::get_id());
      o->cv.notify_all();
    }
    humus_response_free(resp);
    humus_error_free(err);
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return statuses.size();
  }
};

// The driver a binding would run on its own poller: poll the descriptor until the next timer, then run.
class Driver {
 public:
  explicit Driver(humus_runtime* rt) : rt_(rt) {
    EXPECT_EQ(humus_runtime_loop_fd(rt_, &fd_, nullptr), HUMUS_OK);
    thread_ = std::thread([this] { drive(); });
  }
  ~Driver() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::thread::id id() const { return thread_.get_id(); }
  int runs() const { return runs_.load(); }

 private:
  void drive() {
    int64_t next_us = 0;
    while (!stop_) {
      // Woken every 20 ms at most, to see stop_.
      const int timeout = next_us < 0 ? 20 : static_cast<int>(std::min<int64_t>((next_us + 999) / 1000, 20));
      pollfd p{fd_, POLLIN, 0};
      poll(&p, 1, timeout);
      humus_error* err = nullptr;
      ASSERT_EQ(humus_runtime_loop_run(rt_, &next_us, &err), HUMUS_OK)
          << (err ? humus_error_message(err) : "");
      ++runs_;
    }
  }

  humus_runtime* rt_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> runs_{0};
  std::thread thread_;
};

class CallerLoopTest : public humus::test::WithTestServer {
 protected:
  void SetUp() override {
    WithTestServer::SetUp();
    const std::string options = R"({"loop": "caller"})";
    ASSERT_EQ(humus_runtime_new(options.data(), options.size(), &rt_, nullptr), HUMUS_OK);
    make_client(R"("timeout": "10s", "attempt_timeout": "5s")");
  }
  void TearDown() override {
    humus_client_free(client_);
    humus_runtime_free(rt_);
  }
  void make_client(const std::string& timeouts) {
    humus_client_free(client_);
    const std::string json = R"({"base_url": ")" + server().url("http", "") + R"(", )" + timeouts + "}";
    humus_settings* s = nullptr;
    humus_error* err = nullptr;
    ASSERT_EQ(humus_settings_from_json(json.data(), json.size(), &s, &err), HUMUS_OK)
        << (err ? humus_error_message(err) : "");
    ASSERT_EQ(humus_client_new(rt_, s, &client_, &err), HUMUS_OK) << (err ? humus_error_message(err) : "");
    humus_settings_free(s);
  }
  void submit(const std::string& path, Outcomes& out) {
    humus_request* r = nullptr;
    ASSERT_EQ(humus_request_new("GET", server().url("http", path).c_str(), &r, nullptr), HUMUS_OK);
    humus_error* err = nullptr;
    ASSERT_EQ(humus_client_submit(client_, r, &Outcomes::on_done, &out, nullptr, &err), HUMUS_OK)
        << (err ? humus_error_message(err) : "");
    humus_request_free(r);
  }
  static bool wait_for(Outcomes& out, size_t n, milliseconds within = milliseconds(20'000)) {
    std::unique_lock<std::mutex> lock(out.mu);
    return out.cv.wait_for(lock, within, [&] { return out.statuses.size() >= n; });
  }

  humus_runtime* rt_ = nullptr;
  humus_client* client_ = nullptr;
};

TEST(CallerLoopOptionsTest, TheOptionIsCheckedAndTheFunctionsRefuseAThreadedLoop) {
  humus_runtime* rt = nullptr;
  humus_error* err = nullptr;
  const std::string bad = R"({"loop": "fibers"})";
  ASSERT_EQ(humus_runtime_new(bad.data(), bad.size(), &rt, &err), HUMUS_E_CONFIG);
  EXPECT_STREQ(humus_error_field(err, 0), "loop");
  EXPECT_NE(std::strstr(humus_error_message(err), "\"thread\" or \"caller\""), nullptr)
      << humus_error_message(err);
  humus_error_free(err);

  const std::string virtual_caller = R"({"loop": "caller", "clock": "virtual"})";
  ASSERT_EQ(humus_runtime_new(virtual_caller.data(), virtual_caller.size(), &rt, &err), HUMUS_E_CONFIG);
  EXPECT_STREQ(humus_error_field(err, 0), "loop");
  EXPECT_NE(std::strstr(humus_error_message(err), "real clock"), nullptr) << humus_error_message(err);
  humus_error_free(err);

  const std::string threaded = R"({"loop": "thread"})";
  ASSERT_EQ(humus_runtime_new(threaded.data(), threaded.size(), &rt, nullptr), HUMUS_OK);
  int fd = -1;
  int64_t next_us = 0;
  ASSERT_EQ(humus_runtime_loop_fd(rt, &fd, &err), HUMUS_E_MISUSE);
  EXPECT_NE(std::strstr(humus_error_message(err), "thread of its own"), nullptr) << humus_error_message(err);
  humus_error_free(err);
  EXPECT_EQ(humus_runtime_loop_run(rt, &next_us, nullptr), HUMUS_E_MISUSE);
  humus_runtime_free(rt);

  EXPECT_EQ(humus_runtime_loop_run(nullptr, &next_us, nullptr), HUMUS_E_MISUSE);
  const std::string caller = R"({"loop": "caller"})";
  ASSERT_EQ(humus_runtime_new(caller.data(), caller.size(), &rt, nullptr), HUMUS_OK);
  EXPECT_EQ(humus_runtime_loop_fd(rt, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_runtime_loop_run(rt, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  // An idle loop has nothing timed.
  ASSERT_EQ(humus_runtime_loop_run(rt, &next_us, nullptr), HUMUS_OK);
  EXPECT_EQ(next_us, -1);
  humus_runtime_free(rt);
}

TEST_F(CallerLoopTest, CallsFromManyThreadsCompleteOnTheDrivingThreadOnly) {
  Outcomes out;
  Driver driver(rt_);
  constexpr int kThreads = 4;
  constexpr int kEach = 50;
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) submit("/driven", out);
    });
  }
  for (auto& s : submitters) s.join();
  ASSERT_TRUE(wait_for(out, kThreads * kEach));
  std::lock_guard<std::mutex> lock(out.mu);
  for (size_t i = 0; i < out.statuses.size(); ++i) {
    EXPECT_EQ(out.statuses[i], HUMUS_OK);
    EXPECT_EQ(out.http_statuses[i], 200);
    EXPECT_EQ(out.threads[i], driver.id());
  }
  EXPECT_EQ(server().requests("/driven").size(), static_cast<size_t>(kThreads * kEach));
}

TEST_F(CallerLoopTest, NothingIsSentUntilTheLoopIsDriven) {
  Outcomes out;
  submit("/undriven", out);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(server().requests("/undriven").size(), 0u);
  EXPECT_EQ(out.count(), 0u);
  // Driven from this very thread, by the descriptor and *next_us alone, as a binding's poller would.
  int fd = -1;
  ASSERT_EQ(humus_runtime_loop_fd(rt_, &fd, nullptr), HUMUS_OK);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int64_t next_us = 0;
  while (out.count() == 0 && std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, next_us < 0 ? 1000 : static_cast<int>((next_us + 999) / 1000));
    ASSERT_EQ(humus_runtime_loop_run(rt_, &next_us, nullptr), HUMUS_OK);
  }
  close(fd);
  ASSERT_EQ(out.count(), 1u);
  EXPECT_EQ(out.statuses[0], HUMUS_OK);
  EXPECT_EQ(out.threads[0], std::this_thread::get_id());
  EXPECT_EQ(server().requests("/undriven").size(), 1u);
}

TEST_F(CallerLoopTest, ADeadlineFiresFromTheReportedTimerAlone) {
  // The server holds its headers for 30 s; the call's 300 ms deadline is a timer, not a socket event: a
  // timeout is what the call ends with, where a missed timer would have ended it with the 200.
  server().script("/held", nlohmann::json::array({{{"status", 200}, {"delay_ms", 30000}}}));
  make_client(R"("timeout": "300ms", "attempt_timeout": "300ms")");
  Outcomes out;
  Driver driver(rt_);
  const auto started = std::chrono::steady_clock::now();
  submit("/held", out);
  ASSERT_TRUE(wait_for(out, 1, milliseconds(25'000)));
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(out.statuses[0], HUMUS_E_TIMEOUT);
  EXPECT_EQ(out.http_statuses[0], 0);
  EXPECT_GE(took, milliseconds(290));  // not before the deadline: a lower bound, which load only lengthens
}

TEST_F(CallerLoopTest, ClosingAnOpenBodyDrivesTheLoopWhenNoOneElseDoes) {
  humus_request* r = nullptr;
  ASSERT_EQ(humus_request_new("GET", server().url("http", "/opened").c_str(), &r, nullptr), HUMUS_OK);
  struct Opened {
    std::atomic<humus_response*> resp{nullptr};
    static void on_headers(void* user, humus_status status, humus_response* resp, humus_error* err) {
      EXPECT_EQ(status, HUMUS_OK);
      humus_error_free(err);
      static_cast<Opened*>(user)->resp = resp;
    }
  } opened;
  ASSERT_EQ(humus_client_submit_open(client_, r, &Opened::on_headers, &opened, nullptr, nullptr), HUMUS_OK);
  humus_request_free(r);
  {
    Driver driver(rt_);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (opened.resp.load() == nullptr && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(1));
    }
  }
  ASSERT_NE(opened.resp.load(), nullptr);
  // No driver runs now: the close runs the loop on this thread, counts the result and returns.
  humus_response_close(opened.resp.load());
  humus_breaker_counts counts = HUMUS_BREAKER_COUNTS_INIT;
  ASSERT_EQ(humus_client_breaker_counts(client_, &counts), HUMUS_OK);
  EXPECT_EQ(counts.successes, 1u);
}

TEST_F(CallerLoopTest, FreeingAClientWithCallsInFlightDrivesThemToTheirEnd) {
  // The answers would come after 30 s and the calls may last 60 s: only the free's cancel ends them. The
  // 20 s bound tells a free that cancels from one that waits for the answers; no loaded machine nears it.
  server().script("/pending", nlohmann::json::array({{{"status", 200}, {"delay_ms", 30000}}}));
  make_client(R"("timeout": "60s", "attempt_timeout": "60s")");
  Outcomes out;
  for (int i = 0; i < 3; ++i) submit("/pending", out);
  // Nobody drives: the free cancels the three and runs the loop until their outcomes are delivered.
  const auto started = std::chrono::steady_clock::now();
  humus_client_free(client_);
  client_ = nullptr;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  ASSERT_EQ(out.count(), 3u);
  for (humus_status s : out.statuses) EXPECT_EQ(s, HUMUS_E_CANCELLED);
}

// A body that keeps the loop busy past one run's bound leaves work behind: *next_us must say "at once" (0),
// never a time far off, because a driver that waits edge-triggered, as Go's netpoller does, gets no new edge
// for a socket that stayed readable. (Found as a Go read that waited for ever: "work left" was reported as
// Instant::min(), whose distance from now overflowed to the far future.)
TEST_F(CallerLoopTest, WorkLeftOverIsReportedAsDueAtOnce) {
  constexpr size_t kBodySize = 8u << 20;
  server().script("/large", nlohmann::json::array({{{"status", 200}, {"body_size", kBodySize}}}));
  struct Stream {
    humus_response* resp = nullptr;
    std::vector<char> buf = std::vector<char>(16 << 10);
    size_t got = 0;
    bool ended = false;
    humus_status failed = HUMUS_OK;
    void read() {
      humus_error* err = nullptr;
      const humus_status st =
          humus_response_read_async(resp, buf.data(), buf.size(), &Stream::on_read, this, &err);
      if (st != HUMUS_OK) {
        failed = st;
        humus_error_free(err);
      }
    }
    static void on_headers(void* user, humus_status status, humus_response* resp, humus_error* err) {
      auto* s = static_cast<Stream*>(user);
      humus_error_free(err);
      if (status != HUMUS_OK) {
        s->failed = status;
        return;
      }
      s->resp = resp;
      s->read();
    }
    static void on_read(void* user, humus_status status, size_t n, humus_error* err) {
      auto* s = static_cast<Stream*>(user);
      humus_error_free(err);
      if (status != HUMUS_OK) {
        s->failed = status;
      } else if (n == 0) {
        s->ended = true;
      } else {
        s->got += n;
        s->read();
      }
    }
  } stream;
  humus_request* r = nullptr;
  ASSERT_EQ(humus_request_new("GET", server().url("http", "/large").c_str(), &r, nullptr), HUMUS_OK);
  ASSERT_EQ(humus_client_submit_open(client_, r, &Stream::on_headers, &stream, nullptr, nullptr), HUMUS_OK);
  humus_request_free(r);

  int fd = -1;
  ASSERT_EQ(humus_runtime_loop_fd(rt_, &fd, nullptr), HUMUS_OK);
  const int outer = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ASSERT_EQ(epoll_ctl(outer, EPOLL_CTL_ADD, fd, &ev), 0);
  int64_t next_us = 0;
  int64_t latest_us = -1;  // the farthest timer reported: the client's 10 s deadline bounds every real one
  int runs_with_work_left = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!stream.ended && stream.failed == HUMUS_OK && std::chrono::steady_clock::now() < until) {
    if (next_us != 0) {
      epoll_event got{};
      epoll_wait(outer, &got, 1,
                 next_us < 0 ? 1000 : static_cast<int>(std::min<int64_t>((next_us + 999) / 1000, 1000)));
    }
    ASSERT_EQ(humus_runtime_loop_run(rt_, &next_us, nullptr), HUMUS_OK);
    latest_us = std::max(latest_us, next_us);
    if (next_us == 0) ++runs_with_work_left;
  }
  close(outer);
  close(fd);
  EXPECT_EQ(stream.failed, HUMUS_OK);
  EXPECT_TRUE(stream.ended);
  EXPECT_EQ(stream.got, kBodySize);
  EXPECT_LE(latest_us, 10'000'000) << "a timer reported past the call's deadline";
  humus_response_free(stream.resp);
  // Whether a run left work over depends on how fast this machine moves 8 MiB through loopback against the
  // run's bound: an optimised build on a quiet machine may never reach it. Then the bound was not exercised,
  // which is reported as a skip, not a pass.
  if (runs_with_work_left == 0) GTEST_SKIP() << "8 MiB never left work over: the bound was not exercised";
}

TEST_F(CallerLoopTest, RunningTheLoopFromInsideItsOwnCallbackIsRefused) {
  struct Inside {
    humus_runtime* rt;
    std::atomic<int> status{-1};
    std::atomic<bool> done{false};
    static void on_done(void* user, humus_status, humus_response* resp, humus_error* err) {
      auto* in = static_cast<Inside*>(user);
      int64_t next_us = 0;
      in->status = humus_runtime_loop_run(in->rt, &next_us, nullptr);
      humus_response_free(resp);
      humus_error_free(err);
      in->done = true;
    }
  } inside{rt_};
  humus_request* r = nullptr;
  ASSERT_EQ(humus_request_new("GET", server().url("http", "/inside").c_str(), &r, nullptr), HUMUS_OK);
  ASSERT_EQ(humus_client_submit(client_, r, &Inside::on_done, &inside, nullptr, nullptr), HUMUS_OK);
  humus_request_free(r);
  Driver driver(rt_);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!inside.done && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(inside.status.load(), HUMUS_E_MISUSE);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
