// Stepped calls (humus_client_step_start, humus_step_advance, humus_step_free) through the C ABI alone, driven
// as a binding with a poller of its own drives them: advance, and while a step names a descriptor, poll it for
// what it asks, bounded by the wait it names. Against real loopback sockets: the answer, its headers and body,
// a pooled connection reused, a retry's backoff as a wait for time alone, a redirect, an open breaker, the
// send guard, the bulkhead's wait on the step's own descriptor, the deadline, a cancel, a free mid-attempt,
// misuse, HTTP/2 over TLS (a connection per step), large bodies both ways, several steps on one poller; and on
// a virtual clock (or with hedging) the whole call inside the first advance.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "humus_http.h"
#include "support/capi_fixture.h"
#include "support/raw_peer.h"
#include "support/sanitizers.h"
#include "support/stream_peer.h"
#include "support/test_server.h"

namespace {
namespace HUMUS_UNITY_ID {

using humus::test::Checksum;
using humus::test::kThreadSanitized;
using humus::test::RawConnection;
using humus::test::RawPeer;
using std::chrono::milliseconds;

constexpr uint64_t kMiB = uint64_t{1} << 20;
// A hang guard only: a step that never ends fails its test instead of reaching ctest's timeout.
constexpr auto kGuard = std::chrono::seconds(90);
constexpr int64_t kNoCap = std::numeric_limits<int64_t>::max();
constexpr const char* kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

std::string message(humus_error* err) { return err != nullptr ? humus_error_message(err) : ""; }

// poll()'s events for a step's *wait_events: either direction asked for will do.
short poll_events(int events) {
  return static_cast<short>(((events & HUMUS_WAIT_READ) != 0 ? POLLIN : 0) |
                            ((events & HUMUS_WAIT_WRITE) != 0 ? POLLOUT : 0));
}

// What one advance asked to wait for.
struct Wait {
  int fd = -1;
  int events = 0;
  int64_t ms = -1;
};

// A stepped call driven as a binding drives it. Owns the step and the response it returns.
class Stepper {
 public:
  explicit Stepper(humus_step* s) : s_(s) {}
  ~Stepper() {
    humus_response_free(resp);
    humus_step_free(s_);
  }
  Stepper(const Stepper&) = delete;
  Stepper& operator=(const Stepper&) = delete;

  humus_step* get() const { return s_; }
  // Frees the step now (the response it returned, if any, stays).
  void free_step() {
    humus_step_free(s_);
    s_ = nullptr;
  }
  humus_response* take_response() {
    humus_response* r = resp;
    resp = nullptr;
    return r;
  }

  // One advance; true when the step ended: `resp` set, or `status` the call's failure.
  bool advance() {
    ++advances;
    int fd = -2;
    int events = -2;
    int64_t ms = -2;
    humus_response* out = nullptr;
    humus_error* err = nullptr;
    status = humus_step_advance(s_, &out, &fd, &events, &ms, &err);
    if (status != HUMUS_OK) {
      error = message(err);
      error_attempts = humus_error_attempts(err);
      EXPECT_EQ(out, nullptr);
      humus_error_free(err);
      ended = true;
      return true;
    }
    EXPECT_EQ(err, nullptr);
    if (out != nullptr) {
      resp = out;
      ended = true;
      return true;
    }
    // A wait the poller can make: a descriptor and its directions, or time alone with a bound.
    if (fd >= 0) {
      EXPECT_TRUE(events == HUMUS_WAIT_READ || events == HUMUS_WAIT_WRITE ||
                  events == (HUMUS_WAIT_READ | HUMUS_WAIT_WRITE))
          << "events " << events;
      EXPECT_GE(ms, -1);
    } else {
      EXPECT_EQ(fd, -1);
      EXPECT_GE(ms, 0) << "a wait for time alone needs a bound";
    }
    last = Wait{fd, events, ms};
    waits.push_back(last);
    return false;
  }

  // Waits as a poller would for what the last advance asked, never longer than `cap_ms` (advancing early
  // is harmless). True when the descriptor polled ready.
  bool wait(int64_t cap_ms = kNoCap) {
    int64_t bound = last.ms < 0 ? cap_ms : std::min(last.ms, cap_ms);
    bound = std::min<int64_t>(bound, 30'000);
    if (last.fd < 0) {
      std::this_thread::sleep_for(milliseconds(std::max<int64_t>(bound, 0)));
      return false;
    }
    pollfd p{last.fd, poll_events(last.events), 0};
    return ::poll(&p, 1, static_cast<int>(std::max<int64_t>(bound, 0))) > 0;
  }

  // Advances and waits until the step ends. `between` runs after each advance that asked for a wait, before
  // the wait; it may end the drive early by returning false.
  void run(const std::function<bool(const Wait&)>& between = {}, int64_t cap_ms = kNoCap) {
    const auto until = std::chrono::steady_clock::now() + kGuard;
    while (!advance()) {
      if (between && !between(last)) return;
      if (std::chrono::steady_clock::now() > until) {
        ADD_FAILURE() << "the step did not end within the hang guard";
        return;
      }
      wait(cap_ms);
    }
  }

  int fd_waits() const {
    return static_cast<int>(std::count_if(waits.begin(), waits.end(), [](const Wait& w) { return w.fd >= 0; }));
  }
  int time_waits() const { return static_cast<int>(waits.size()) - fd_waits(); }

  int advances = 0;
  std::vector<Wait> waits;  // one per advance that asked for a wait
  Wait last;
  bool ended = false;
  humus_status status = HUMUS_OK;
  humus_response* resp = nullptr;
  std::string error;
  int32_t error_attempts = -1;

 private:
  humus_step* s_;
};

// A body read to its end.
struct Body {
  humus_status status = HUMUS_OK;
  std::string error;
  std::string text;  // kept only when asked for
  Checksum sum;
  int waits = 0;
};

// Reads as a binding with a poller does (humus_response_read_ready), waiting on the socket it names.
Body read_ready_all(humus_response* resp, bool keep_text) {
  Body b;
  std::vector<char> buf(64 * 1024);
  const auto until = std::chrono::steady_clock::now() + kGuard;
  for (;;) {
    size_t n = 0;
    int fd = -2;
    int64_t wait_ms = -2;
    humus_error* err = nullptr;
    b.status = humus_response_read_ready(resp, buf.data(), buf.size(), &n, &fd, &wait_ms, &err);
    if (b.status != HUMUS_OK) {
      b.error = message(err);
      humus_error_free(err);
      return b;
    }
    if (n > 0) {
      b.sum.update(reinterpret_cast<const uint8_t*>(buf.data()), n);
      if (keep_text) b.text.append(buf.data(), n);
      continue;
    }
    if (fd < 0) return b;  // the end
    if (std::chrono::steady_clock::now() > until) {
      b.status = HUMUS_E_TIMEOUT;
      b.error = "the body did not end within the hang guard";
      return b;
    }
    ++b.waits;
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(wait_ms < 0 ? 30'000 : std::min<int64_t>(wait_ms, 30'000)));
  }
}

// Reads with the blocking humus_response_read.
Body read_all(humus_response* resp) {
  Body b;
  std::vector<char> buf(16 * 1024);
  for (;;) {
    size_t n = 0;
    humus_error* err = nullptr;
    b.status = humus_response_read(resp, buf.data(), buf.size(), &n, &err);
    if (b.status != HUMUS_OK) {
      b.error = message(err);
      humus_error_free(err);
      return b;
    }
    if (n == 0) return b;
    b.sum.update(reinterpret_cast<const uint8_t*>(buf.data()), n);
    b.text.append(buf.data(), n);
  }
}

// Waits (bounded) until `done` holds.
bool comes_true(const std::function<bool()>& done, std::chrono::seconds bound = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

class StepFixture : protected humus::test::CapiClientFixture {
 protected:
  // Starts a stepped call of `req` on the client; null (the test failed) when refused.
  std::unique_ptr<Stepper> start(const humus_request* req) {
    humus_step* s = nullptr;
    humus_error* err = nullptr;
    const humus_status st = humus_client_step_start(client_, req, &s, &err);
    EXPECT_EQ(st, HUMUS_OK) << message(err);
    humus_error_free(err);
    if (st != HUMUS_OK || s == nullptr) return nullptr;
    return std::make_unique<Stepper>(s);
  }

  // The only slot of a client's bulkhead, held by an open body of humus_client_open (not read): the tests
  // free `resp` to give it back, and `req` at their end.
  struct HeldSlot {
    humus_request* req = nullptr;
    humus_response* resp = nullptr;
  };
  HeldSlot hold_the_only_slot(const std::string& base_url, const std::string& url, const std::string& wait,
                              const std::string& timeouts = R"("timeout": "60s", "attempt_timeout": "30s")") {
    make_client(base_url, R"(, "bulkhead": {"max_concurrent": 1, "wait": ")" + wait + R"("})", timeouts);
    HeldSlot held{request(url), nullptr};
    humus_error* err = nullptr;
    EXPECT_EQ(humus_client_open(client_, held.req, &held.resp, &err), HUMUS_OK) << message(err);
    humus_error_free(err);
    return held;
  }
};

class StepPeerTest : public humus::test::CapiPeerTest<StepFixture> {};
class StepServerTest : public humus::test::CapiServerTest<StepFixture> {};
// Against a RawPeer made by the test itself.
class StepRawTest : public ::testing::Test, protected StepFixture {
 protected:
  void SetUp() override { start_runtime(); }
  void TearDown() override { stop(); }
};

TEST_F(StepServerTest, AGetOverHttp11WaitsOnItsSocketAndReturnsTheAnswer) {
  // The answer comes late, so the first advance cannot have it: the step must hand the wait to the caller.
  server().script("/one", nlohmann::json::array({{{"status", 201},
                                                  {"headers", {{"X-Step", "one"}, {"Content-Type", "text/plain"}}},
                                                  {"body", "stepped hello"},
                                                  {"delay_ms", 150}}}));
  make_client(url(""));
  humus_request* req = request(url("/one"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 201);
  EXPECT_STREQ(humus_response_header(step->resp, "x-step"), "one");
  EXPECT_STREQ(humus_response_header(step->resp, "Content-Type"), "text/plain");
  EXPECT_STREQ(humus_response_http_version(step->resp), "1.1");
  EXPECT_EQ(humus_response_attempts(step->resp), 1);
  EXPECT_GE(step->fd_waits(), 1);
  EXPECT_GT(step->advances, 1);
  Body body = read_ready_all(step->resp, true);
  EXPECT_EQ(body.status, HUMUS_OK) << body.error;
  EXPECT_EQ(body.text, "stepped hello");
  const auto records = server().requests("/one");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["method"], "GET");
  EXPECT_EQ(records[0]["protocol"], "1.1");
  step.reset();
  EXPECT_EQ(counts().successes, 1u);  // read to its end: counted as a blocking call's would be
  humus_request_free(req);
}

TEST_F(StepServerTest, NothingIsSentBeforeTheFirstAdvance) {
  make_client(url(""));
  humus_request* req = request(url("/unsent"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  std::this_thread::sleep_for(milliseconds(100));  // room for a request that should not be on its way
  EXPECT_EQ(server().requests("/unsent").size(), 0u);
  step.reset();  // freed before any advance: never sent
  EXPECT_EQ(server().requests("/unsent").size(), 0u);
  EXPECT_EQ(counts().successes + counts().failures, 0u);
  humus_request_free(req);
}

TEST_F(StepServerTest, TwoStepsInARowReuseThePooledConnection) {
  server().script("/again", nlohmann::json::array({{{"status", 200}, {"body", "again"}}}));
  make_client(url(""));
  humus_request* req = request(url("/again"));
  for (int round = 0; round < 2; ++round) {
    std::unique_ptr<Stepper> step = start(req);
    ASSERT_NE(step, nullptr);
    step->run();
    ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
    Body body = read_all(step->resp);  // to its end, so the connection goes back to the pool
    EXPECT_EQ(body.status, HUMUS_OK) << body.error;
    EXPECT_EQ(body.text, "again");
  }
  const auto records = server().requests("/again");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["connection"], records[1]["connection"]);
  EXPECT_EQ(records[1]["stream"], 2);  // the second request on that HTTP/1.1 connection
  humus_request_free(req);
}

TEST_F(StepServerTest, A503ThenA200MakesTwoAttemptsWithAWaitForTimeAloneBetween) {
  // Retry-After makes the wait certain: a backoff drawn alone could be 0 ms and need no wait at all.
  server().script("/flaky", nlohmann::json::array({{{"status", 503}, {"headers", {{"Retry-After", "1"}}}},
                                                    {{"status", 200}, {"body", "fine"}}}));
  make_client(url(""), R"(, "max_retry_after": "5s")");
  humus_request* req = request(url("/flaky"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  std::vector<size_t> seen_at_time_waits;  // requests at the server when the step waited for time alone
  step->run([&](const Wait& w) {
    if (w.fd == -1) seen_at_time_waits.push_back(server().requests("/flaky").size());
    return true;
  });
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 200);
  EXPECT_EQ(humus_response_attempts(step->resp), 2);
  ASSERT_GE(step->time_waits(), 1);
  for (const Wait& w : step->waits) {
    if (w.fd == -1) {
      EXPECT_GE(w.ms, 0);
    }
  }
  // The backoff comes between the attempts: the 503 was served, the retry not yet sent.
  for (size_t seen : seen_at_time_waits) EXPECT_EQ(seen, 1u);
  EXPECT_EQ(server().requests("/flaky").size(), 2u);
  Body body = read_ready_all(step->resp, true);
  EXPECT_EQ(body.text, "fine");
  humus_request_free(req);
}

// F201: a POST without an idempotency key is read by its peer, whose connection then resets with no answer.
TEST_F(StepRawTest, F201APostLostAfterItWasSentIsNotSentAgainAsTheBlockingCallDecides) {
  RawPeer peer([](RawConnection& c) {
    if (c.read_request()) c.reset();
  });
  // The breaker stays out of it: five failures in a row would open it before the GET's last attempt.
  make_client(peer.url(""), R"(, "max_attempts": 3, "trip": {"consecutive_failures": 100, "min_results": 100})");
  humus_request* req = request(peer.url("/charge"), "POST");
  ASSERT_EQ(humus_request_set_body(req, "{\"amount\": 5}", 13), HUMUS_OK);

  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  EXPECT_EQ(step->resp, nullptr);
  EXPECT_EQ(step->status, HUMUS_E_CONNECTION_LOST) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(step->error_attempts, 1);
  EXPECT_EQ(peer.requests(), 1);  // sent once: the send guard held on the stepped path
  const humus_status stepped = step->status;
  step.reset();

  // The blocking call, against the same peer in the same situation, decides the same.
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  const humus_status blocking = humus_client_open(client_, req, &resp, &err);
  EXPECT_EQ(resp, nullptr);
  EXPECT_EQ(blocking, stepped) << message(err);
  EXPECT_EQ(humus_error_attempts(err), 1);
  EXPECT_EQ(peer.requests(), 2);
  humus_error_free(err);
  humus_response_free(resp);

  // A GET lost the same way may be sent again: the single attempt above was the guard's doing.
  humus_request* get = request(peer.url("/charge"));
  step = start(get);
  ASSERT_NE(step, nullptr);
  step->run();
  EXPECT_EQ(step->status, HUMUS_E_CONNECTION_LOST) << step->error;
  EXPECT_EQ(step->error_attempts, 3);
  EXPECT_EQ(peer.requests(), 5);
  step.reset();
  humus_request_free(get);
  humus_request_free(req);
}

TEST_F(StepServerTest, A503WhoseBodyComesLateIsReadOnTheStepsWaitsBeforeTheRetry) {
  // The 503's body must be read (and its connection kept) before the retry: it is late, so that read waits too.
  server().script("/slow503", nlohmann::json::array({{{"status", 503}, {"body", "busy"}, {"body_delay_ms", 200}},
                                                      {{"status", 200}, {"body", "done"}}}));
  make_client(url(""));
  humus_request* req = request(url("/slow503"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  int waits_after_the_503 = 0;  // descriptor waits while the 503 is in and its retry not sent
  step->run(
      [&](const Wait& w) {
        if (w.fd >= 0 && server().requests("/slow503").size() == 1) ++waits_after_the_503;
        return true;
      },
      20);
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 200);
  EXPECT_EQ(humus_response_attempts(step->resp), 2);
  EXPECT_EQ(read_ready_all(step->resp, true).text, "done");
  EXPECT_GE(waits_after_the_503, 1);
  const auto records = server().requests("/slow503");
  ASSERT_EQ(records.size(), 2u);
  humus_request_free(req);
}

// F201: libcurl's own resend of a request whose reused keep-alive connection died once it was written
// (docs/libcurl-traps.md §19) is stopped on the stepped path too: the server reads the POST and closes unanswered.
TEST_F(StepServerTest, F201APostOnADeadReusedConnectionIsSentOnceAsTheBlockingCallSendsIt) {
  make_client(url(""), R"(, "max_attempts": 3)");
  humus_request* warm = request(url("/warm"));
  humus_request* post = request(url("/charge"), "POST");
  ASSERT_EQ(humus_request_set_body(post, "charge=1", 8), HUMUS_OK);
  // Warms one keep-alive connection whose next request the server swallows.
  auto warm_up = [&] {
    server().script("/warm", nlohmann::json::array({{{"status", 200}, {"kill_after_request", true}}}), false);
    std::unique_ptr<Stepper> w = start(warm);
    ASSERT_NE(w, nullptr);
    w->run();
    ASSERT_NE(w->resp, nullptr) << humus_status_name(w->status) << ": " << w->error;
    EXPECT_EQ(read_all(w->resp).status, HUMUS_OK);
  };

  warm_up();
  std::unique_ptr<Stepper> step = start(post);
  ASSERT_NE(step, nullptr);
  step->run();
  EXPECT_EQ(step->resp, nullptr);
  EXPECT_EQ(step->status, HUMUS_E_CONNECTION_LOST) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(step->error_attempts, 1);
  const auto records = server().requests("/charge");
  ASSERT_EQ(records.size(), 1u) << "the POST reached the server more than once";
  EXPECT_TRUE(records[0]["killed"].get<bool>());
  const humus_status stepped = step->status;
  step.reset();

  warm_up();
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  const humus_status blocking = humus_client_open(client_, post, &resp, &err);
  EXPECT_EQ(resp, nullptr);
  EXPECT_EQ(blocking, stepped) << message(err);
  EXPECT_EQ(humus_error_attempts(err), 1);
  EXPECT_EQ(server().requests("/charge").size(), 2u);
  humus_error_free(err);
  humus_response_free(resp);

  // A GET swallowed the same way is sent again, as an attempt of its own that the response counts.
  warm_up();
  humus_request* get = request(url("/safe"));
  step = start(get);
  ASSERT_NE(step, nullptr);
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_attempts(step->resp), 2);
  EXPECT_EQ(server().requests("/safe").size(), 2u);
  step.reset();
  humus_request_free(get);
  humus_request_free(post);
  humus_request_free(warm);
}

// F205: the only bulkhead slot is held by an open body; the step waits for it on a descriptor of its own.
TEST_F(StepPeerTest, F205AStepWaitsForABulkheadSlotOnItsDescriptorAndGoesOnOnceItIsFreed) {
  const HeldSlot held = hold_the_only_slot(peer_->base_url(), peer_->url("/bytes/100001"), "30s");  // body not read
  ASSERT_NE(held.resp, nullptr);

  humus_request* req = request(peer_->url("/bytes/1000"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  ASSERT_FALSE(step->advance()) << humus_status_name(step->status) << ": " << step->error;
  const Wait slot = step->last;
  ASSERT_GE(slot.fd, 0);
  EXPECT_EQ(slot.events, HUMUS_WAIT_READ);
  EXPECT_GE(slot.ms, 0);
  EXPECT_LE(slot.ms, 30'000);  // never past the bulkhead's wait
  pollfd p{slot.fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 50), 0);  // no slot yet: nothing to wake for
  // Advancing early is harmless: still waiting, nothing sent.
  ASSERT_FALSE(step->advance()) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(peer_->count("/bytes/1000"), 0u);

  // The slot is given back on another thread while this one sits in poll(), as a binding's would.
  std::thread freer([held] {
    std::this_thread::sleep_for(milliseconds(20));
    humus_response_free(held.resp);
  });
  p = pollfd{step->last.fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 10'000), 1);
  EXPECT_NE(p.revents & POLLIN, 0);
  freer.join();
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 200);
  Body body = read_ready_all(step->resp, false);
  EXPECT_EQ(body.status, HUMUS_OK) << body.error;
  EXPECT_EQ(body.sum.value(), humus::test::pattern_checksum(1000));
  EXPECT_EQ(peer_->count("/bytes/1000"), 1u);
  humus_request_free(req);
  humus_request_free(held.req);
}

// F205: with a short bulkhead wait the step gives up as a blocking call would, but the waiting was the caller's.
TEST_F(StepPeerTest, F205AFullBulkheadEndsTheStepWithBulkheadFullAfterWaitsOfTheCallers) {
  const HeldSlot held = hold_the_only_slot(peer_->base_url(), peer_->url("/bytes/100002"), "100ms");
  ASSERT_NE(held.resp, nullptr);

  humus_request* req = request(peer_->url("/bytes/1001"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  EXPECT_EQ(step->resp, nullptr);
  EXPECT_EQ(step->status, HUMUS_E_BULKHEAD_FULL) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(step->error_attempts, 0);
  // Each advance returned and the waiting happened in the caller's poll, bounded by the bulkhead's wait.
  EXPECT_GE(step->waits.size(), 1u);
  for (const Wait& w : step->waits) {
    EXPECT_GE(w.ms, 0);
    EXPECT_LE(w.ms, 100);
  }
  EXPECT_EQ(peer_->count("/bytes/1001"), 0u);
  humus_response_free(held.resp);
  humus_request_free(req);
  humus_request_free(held.req);
}

// F205: the call's deadline comes before the bulkhead's wait ends: the step ends as the blocking call does.
TEST_F(StepPeerTest, F205ADeadlineBeforeTheBulkheadWaitEndsTheStepAsTheBlockingCallEnds) {
  const HeldSlot held = hold_the_only_slot(peer_->base_url(), peer_->url("/bytes/100004"), "30s",
                                           R"("timeout": "300ms", "attempt_timeout": "300ms")");
  ASSERT_NE(held.resp, nullptr);
  humus_error* err = nullptr;

  humus_request* req = request(peer_->url("/bytes/1003"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  EXPECT_EQ(step->resp, nullptr);
  EXPECT_NE(step->status, HUMUS_OK);
  EXPECT_GE(step->waits.size(), 1u);
  for (const Wait& w : step->waits) EXPECT_LE(w.ms, 300);  // the deadline bounds the wait for a slot

  humus_response* resp = nullptr;
  const humus_status blocking = humus_client_open(client_, req, &resp, &err);
  EXPECT_EQ(resp, nullptr);
  EXPECT_EQ(step->status, blocking) << humus_status_name(step->status) << " / " << humus_status_name(blocking)
                                    << ": " << step->error << " / " << message(err);
  EXPECT_EQ(step->error_attempts, humus_error_attempts(err));
  humus_error_free(err);
  EXPECT_EQ(peer_->count("/bytes/1003"), 0u);
  humus_response_free(held.resp);
  humus_request_free(req);
  humus_request_free(held.req);
}

// F206: a step waiting for the only bulkhead slot is cancelled: the next advance ends it, and it takes no slot.
TEST_F(StepPeerTest, F206ACancelWhileWaitingForASlotEndsTheStepAndTakesNoSlot) {
  const HeldSlot held = hold_the_only_slot(peer_->base_url(), peer_->url("/bytes/100005"), "30s");
  ASSERT_NE(held.resp, nullptr);
  humus_error* err = nullptr;

  humus_request* req = request(peer_->url("/bytes/1004"));
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  ASSERT_EQ(humus_request_set_cancel(req, cancel), HUMUS_OK);
  std::unique_ptr<Stepper> waiting = start(req);
  ASSERT_NE(waiting, nullptr);
  ASSERT_FALSE(waiting->advance()) << humus_status_name(waiting->status) << ": " << waiting->error;
  ASSERT_GE(waiting->last.fd, 0);
  humus_cancel_trigger(cancel);
  EXPECT_TRUE(waiting->advance());
  EXPECT_EQ(waiting->status, HUMUS_E_CANCELLED) << humus_status_name(waiting->status) << ": " << waiting->error;
  EXPECT_EQ(waiting->error_attempts, 0);
  waiting.reset();
  humus_response_free(held.resp);

  // Both calls are blocking and the only slot must be free for each: none was kept by the cancelled step.
  humus_request* other = request(peer_->url("/bytes/1005"));
  for (int i = 0; i < 2; ++i) {
    humus_response* resp = nullptr;
    ASSERT_EQ(humus_client_do(client_, other, &resp, &err), HUMUS_OK) << message(err);
    humus_response_free(resp);
  }
  EXPECT_EQ(peer_->count("/bytes/1004"), 0u);
  humus_cancel_free(cancel);
  humus_request_free(other);
  humus_request_free(req);
  humus_request_free(held.req);
}

// F206: a step waiting for the only bulkhead slot is freed: its wait is abandoned and takes no slot with it.
TEST_F(StepPeerTest, F206AStepFreedWhileWaitingForASlotLeavesTheSlotToTheNextCall) {
  const HeldSlot held = hold_the_only_slot(peer_->base_url(), peer_->url("/bytes/100003"), "30s");
  ASSERT_NE(held.resp, nullptr);
  humus_error* err = nullptr;

  humus_request* req = request(peer_->url("/bytes/1002"));
  std::unique_ptr<Stepper> waiting = start(req);
  ASSERT_NE(waiting, nullptr);
  ASSERT_FALSE(waiting->advance()) << humus_status_name(waiting->status) << ": " << waiting->error;
  ASSERT_GE(waiting->last.fd, 0);
  waiting.reset();
  humus_response_free(held.resp);

  // With max_concurrent 1, a slot leaked to the abandoned wait would leave this one waiting 30 s and failing.
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  Body body = read_ready_all(step->resp, false);
  EXPECT_EQ(body.sum.value(), humus::test::pattern_checksum(1002));
  step.reset();
  EXPECT_EQ(peer_->count("/bytes/1002"), 1u);  // the freed step sent nothing
  humus_response* resp = nullptr;
  ASSERT_EQ(humus_client_do(client_, req, &resp, &err), HUMUS_OK) << message(err);
  humus_response_free(resp);
  humus_request_free(req);
  humus_request_free(held.req);
}

// F202: the deadline passes while a stepped call waits for an answer that never comes.
TEST_F(StepServerTest, F202AStepWhoseAnswerNeverComesEndsAtTheDeadlineAndNeverAsksToWaitPastIt) {
  server().script("/silent", nlohmann::json::array({{{"hang", true}}}));
  make_client(url(""), "", R"("timeout": "300ms", "attempt_timeout": "300ms")");
  humus_request* req = request(url("/silent"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  EXPECT_EQ(step->resp, nullptr);
  EXPECT_EQ(step->status, HUMUS_E_TIMEOUT) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_GE(step->fd_waits(), 1);
  for (const Wait& w : step->waits) {
    EXPECT_GE(w.ms, 0) << "a call with a deadline asked for a wait with no bound";
    EXPECT_LE(w.ms, 300);
  }
  EXPECT_GE(server().requests("/silent").size(), 1u);
  humus_request_free(req);
}

// F203: the caller cancels through the request's token while it waits on the step's descriptor.
TEST_F(StepServerTest, F203ACancelWhileTheCallerWaitsEndsTheNextAdvanceWithCancelled) {
  server().script("/held", nlohmann::json::array({{{"hang", true}}}));
  make_client(url(""));
  humus_request* req = request(url("/held"));
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  ASSERT_EQ(humus_request_set_cancel(req, cancel), HUMUS_OK);
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  bool cancelled = false;
  // Polls in short pieces so the test sees the request arrive; the wait it was in is the one cancelled.
  step->run(
      [&](const Wait& w) {
        if (w.fd >= 0 && server().requests("/held").size() == 1) {
          humus_cancel_trigger(cancel);  // a binding ends its wait when it triggers one
          cancelled = true;
          return false;
        }
        return true;
      },
      20);
  ASSERT_TRUE(cancelled) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_TRUE(step->advance());
  EXPECT_EQ(step->status, HUMUS_E_CANCELLED) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(step->resp, nullptr);
  step.reset();
  EXPECT_EQ(counts().failures, 0u);  // the caller gave up: no verdict on the dependency
  EXPECT_EQ(server().requests("/held").size(), 1u);
  humus_cancel_free(cancel);
  humus_request_free(req);
}

// F203: the cancel comes while the step waits for a backoff (a wait for time alone): as for a blocking call
// (docs/retries.md §6.6), the call returns the response it had, and the retry is never sent.
TEST_F(StepServerTest, F203ACancelDuringTheBackoffReturnsTheEarlierResponseAndSendsNoRetry) {
  server().script("/later", nlohmann::json::array({{{"status", 503}, {"headers", {{"Retry-After", "2"}}}},
                                                    {{"status", 200}}}));
  make_client(url(""), R"(, "max_retry_after": "5s")");
  humus_request* req = request(url("/later"));
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  ASSERT_EQ(humus_request_set_cancel(req, cancel), HUMUS_OK);
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  bool cancelled = false;
  step->run([&](const Wait& w) {
    if (w.fd != -1) return true;
    humus_cancel_trigger(cancel);
    cancelled = true;
    return false;
  });
  ASSERT_TRUE(cancelled) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_TRUE(step->advance());
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 503);
  EXPECT_EQ(humus_response_attempts(step->resp), 1);
  step.reset();
  EXPECT_EQ(server().requests("/later").size(), 1u);
  humus_cancel_free(cancel);
  humus_request_free(req);
}

// F203: the cancel comes from another thread while the driving one sits in poll(): the binding wakes its own
// poller (here a pipe beside the step's descriptor), and the advance that follows ends the call.
TEST_F(StepServerTest, F203ACancelFromAnotherThreadWakesThePollerAndTheAdvanceEndsTheCall) {
  server().script("/held2", nlohmann::json::array({{{"hang", true}}}));
  make_client(url(""));
  humus_request* req = request(url("/held2"));
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  ASSERT_EQ(humus_request_set_cancel(req, cancel), HUMUS_OK);
  int wake[2] = {-1, -1};
  ASSERT_EQ(::pipe(wake), 0);
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  std::atomic<bool> triggered{false};
  std::thread canceller([&] {
    if (!comes_true([&] { return server().requests("/held2").size() == 1; })) return;
    humus_cancel_trigger(cancel);
    triggered = true;
    const char byte = 1;
    EXPECT_EQ(::write(wake[1], &byte, 1), 1);
  });
  const auto until = std::chrono::steady_clock::now() + kGuard;
  bool woken = false;
  while (!step->advance() && std::chrono::steady_clock::now() < until) {
    const Wait& w = step->last;
    pollfd p[2] = {{wake[0], POLLIN, 0}, {w.fd, poll_events(w.events), 0}};
    ::poll(p, w.fd >= 0 ? 2 : 1, static_cast<int>(w.ms < 0 ? 30'000 : std::min<int64_t>(w.ms, 30'000)));
    if ((p[0].revents & POLLIN) != 0) {
      woken = true;
      EXPECT_TRUE(step->advance()) << "the advance after the cancel asked to wait again";
      break;
    }
  }
  canceller.join();
  EXPECT_TRUE(triggered.load());
  EXPECT_TRUE(woken);
  EXPECT_EQ(step->status, HUMUS_E_CANCELLED) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(step->resp, nullptr);
  step.reset();
  EXPECT_EQ(counts().failures, 0u);
  ::close(wake[0]);
  ::close(wake[1]);
  humus_cancel_free(cancel);
  humus_request_free(req);
}

// F204: the step is freed while its attempt is in flight, the peer holding the request unanswered.
TEST_F(StepRawTest, F204AStepFreedMidAttemptClosesItsConnectionAndTheNextStepSucceeds) {
  std::atomic<int> accepted{0};
  std::atomic<bool> holding{false};
  std::atomic<bool> closed{false};
  RawPeer peer([&](RawConnection& c) {
    if (++accepted == 1) {
      if (!c.read_request()) return;
      holding = true;
      // Held unanswered until the client closes its side (FIN or RST), or the peer shuts down.
      for (int i = 0; i < 400 && !closed; ++i) {
        pollfd p{c.fd(), POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        char b[512];
        if (::recv(c.fd(), b, sizeof b, MSG_DONTWAIT) <= 0) closed = true;
      }
      return;
    }
    while (c.read_request()) c.write(kOk);
  });
  make_client(peer.url(""));
  humus_request* req = request(peer.url("/hold"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run([&](const Wait&) { return !holding.load(); }, 20);
  ASSERT_TRUE(holding.load()) << humus_status_name(step->status) << ": " << step->error;
  ASSERT_FALSE(step->ended);
  step->free_step();
  EXPECT_TRUE(comes_true([&] { return closed.load(); })) << "the peer never saw the connection closed";
  EXPECT_EQ(peer.requests(), 1);  // nothing more sent

  step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 200);
  EXPECT_EQ(humus_response_attempts(step->resp), 1);
  Body body = read_all(step->resp);
  EXPECT_EQ(body.text, "ok");
  step.reset();
  EXPECT_EQ(peer.connections(), 2);  // the cut connection went nowhere near the pool
  EXPECT_EQ(counts().failures, 0u);  // the freed attempt counts as cancelled
  humus_request_free(req);
}

TEST_F(StepPeerTest, MisuseIsRefusedAndASpentStepAdvancesNoMore) {
  make_client(peer_->base_url());
  humus_request* req = request(peer_->url("/bytes/10"));
  humus_step* s = nullptr;
  humus_error* err = nullptr;
  EXPECT_EQ(humus_client_step_start(client_, req, nullptr, &err), HUMUS_E_INVALID_ARGUMENT);
  humus_error_free(err);
  err = nullptr;
  EXPECT_EQ(humus_client_step_start(nullptr, req, &s, nullptr), HUMUS_E_MISUSE);
  EXPECT_EQ(humus_client_step_start(client_, nullptr, &s, nullptr), HUMUS_E_MISUSE);
  humus_step_free(nullptr);  // harmless

  humus_response* out = nullptr;
  int fd = -2;
  int events = -2;
  int64_t ms = -2;
  EXPECT_EQ(humus_step_advance(nullptr, &out, &fd, &events, &ms, nullptr), HUMUS_E_MISUSE);

  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(humus_step_advance(step->get(), nullptr, &fd, &events, &ms, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_step_advance(step->get(), &out, nullptr, &events, &ms, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_step_advance(step->get(), &out, &fd, nullptr, &ms, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(humus_step_advance(step->get(), &out, &fd, &events, nullptr, nullptr), HUMUS_E_INVALID_ARGUMENT);
  EXPECT_EQ(out, nullptr);
  // The refused advances left the step as it was: it runs to its answer.
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 200);
  EXPECT_EQ(humus_step_advance(step->get(), &out, &fd, &events, &ms, &err), HUMUS_E_MISUSE);
  EXPECT_EQ(out, nullptr);
  humus_error_free(err);
  err = nullptr;
  // The spent step's response stays valid once the step is freed; the freed step is refused, its free ignored.
  humus_step* freed = step->get();
  step->free_step();
  EXPECT_EQ(humus_step_advance(freed, &out, &fd, &events, &ms, nullptr), HUMUS_E_MISUSE);
  humus_step_free(freed);
  alignas(16) unsigned char foreign[256] = {};
  EXPECT_EQ(humus_step_advance(reinterpret_cast<humus_step*>(foreign), &out, &fd, &events, &ms, nullptr),
            HUMUS_E_MISUSE);
  humus_step_free(reinterpret_cast<humus_step*>(foreign));
  Body body = read_all(step->resp);
  EXPECT_EQ(body.status, HUMUS_OK) << body.error;
  EXPECT_EQ(body.sum.value(), humus::test::pattern_checksum(10));
  EXPECT_EQ(peer_->count("/bytes/10"), 1u);

  // A step spent by an error: a token triggered before the first advance ends it with nothing sent.
  humus_cancel* cancel = nullptr;
  ASSERT_EQ(humus_cancel_new(&cancel), HUMUS_OK);
  humus_request* cancelled_req = request(peer_->url("/bytes/11"));
  ASSERT_EQ(humus_request_set_cancel(cancelled_req, cancel), HUMUS_OK);
  humus_cancel_trigger(cancel);
  std::unique_ptr<Stepper> spent = start(cancelled_req);
  ASSERT_NE(spent, nullptr);
  spent->run();
  EXPECT_EQ(spent->status, HUMUS_E_CANCELLED) << humus_status_name(spent->status);
  EXPECT_EQ(humus_step_advance(spent->get(), &out, &fd, &events, &ms, nullptr), HUMUS_E_MISUSE);
  EXPECT_EQ(out, nullptr);
  spent.reset();
  EXPECT_EQ(peer_->count("/bytes/11"), 0u);
  humus_cancel_free(cancel);
  humus_request_free(cancelled_req);
  humus_request_free(req);
}

TEST_F(StepServerTest, AGetOverHttp2WithTlsReportsHttp2) {
  server().script("/h2", nlohmann::json::array({{{"status", 200}, {"body", "over two"}, {"delay_ms", 50}}}));
  make_client("https://" + server().host_port("https"), R"(, "tls": {"ca_file": ")" + server().ca_file() + R"("})");
  humus_request* req = request(server().url("https", "/h2"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 200);
  EXPECT_STREQ(humus_response_http_version(step->resp), "2");
  Body body = read_ready_all(step->resp, true);
  EXPECT_EQ(body.status, HUMUS_OK) << body.error;
  EXPECT_EQ(body.text, "over two");
  const auto records = server().requests("/h2");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["protocol"], "2");
  humus_request_free(req);
}

TEST_F(StepServerTest, TwoStepsInFlightOverHttp2EachHaveAConnectionOfTheirOwn) {
  server().script("/own", nlohmann::json::array({{{"status", 200}, {"body", "own"}, {"delay_ms", 150}}}));
  make_client("https://" + server().host_port("https"), R"(, "tls": {"ca_file": ")" + server().ca_file() + R"("})");
  humus_request* req = request(server().url("https", "/own"));
  std::unique_ptr<Stepper> a = start(req);
  std::unique_ptr<Stepper> b = start(req);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // Both in flight at once, one poller driving them in turn.
  const auto until = std::chrono::steady_clock::now() + kGuard;
  bool a_on = !a->advance();
  bool b_on = !b->advance();
  while ((a_on || b_on) && std::chrono::steady_clock::now() < until) {
    if (a_on) a->wait(5);
    if (b_on) b->wait(5);
    if (a_on) a_on = !a->advance();
    if (b_on) b_on = !b->advance();
  }
  ASSERT_NE(a->resp, nullptr) << humus_status_name(a->status) << ": " << a->error;
  ASSERT_NE(b->resp, nullptr) << humus_status_name(b->status) << ": " << b->error;
  EXPECT_STREQ(humus_response_http_version(a->resp), "2");
  EXPECT_STREQ(humus_response_http_version(b->resp), "2");
  EXPECT_EQ(read_ready_all(a->resp, true).text, "own");
  EXPECT_EQ(read_ready_all(b->resp, true).text, "own");
  const auto records = server().requests("/own");
  ASSERT_EQ(records.size(), 2u);
  // Calls that should share a connection go through humus_client_submit: a stepped one keeps its own.
  EXPECT_NE(records[0]["connection"], records[1]["connection"]);
  humus_request_free(req);
}

TEST_F(StepServerTest, ARedirectWithinTheOriginIsFollowedInsideTheStep) {
  server().script("/moved", nlohmann::json::array({{{"status", 302}, {"headers", {{"Location", url("/target")}}}}}));
  server().script("/target", nlohmann::json::array({{{"status", 200}, {"body", "arrived"}}}));
  make_client(url(""));
  humus_request* req = request(url("/moved"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 200);
  EXPECT_EQ(read_ready_all(step->resp, true).text, "arrived");
  EXPECT_EQ(server().requests("/moved").size(), 1u);
  EXPECT_EQ(server().requests("/target").size(), 1u);
  humus_request_free(req);
}

TEST_F(StepPeerTest, AnOpenBreakerRejectsTheStepWithNothingSent) {
  make_client(peer_->base_url(), R"(, "max_attempts": 1, "trip": {"consecutive_failures": 1})");
  humus_request* failing = request(peer_->url("/status/500"));
  std::unique_ptr<Stepper> step = start(failing);
  ASSERT_NE(step, nullptr);
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 500);
  EXPECT_EQ(read_all(step->resp).status, HUMUS_OK);  // read to its end: the failure is counted
  step.reset();
  ASSERT_EQ(state(), HUMUS_CIRCUIT_OPEN);

  humus_request* req = request(peer_->url("/bytes/12"));
  step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  EXPECT_EQ(step->resp, nullptr);
  EXPECT_EQ(step->status, HUMUS_E_REJECTED) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(step->error_attempts, 0);
  EXPECT_EQ(peer_->count("/bytes/12"), 0u);
  step.reset();
  humus_request_free(req);
  humus_request_free(failing);
}

// F207: in a process with descriptors numbered past FD_SETSIZE, libcurl cannot name the transfer's socket
// (curl_multi_fdset leaves it out): the step waits for it inside the advance rather than asking for a wait
// for time alone, which could outwait the answer. Every advance still returns the call's progress.
TEST_F(StepPeerTest, F207ASocketNumberedPastFdSetSizeIsWaitedForInsideTheAdvance) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlimit saved = limit;
  if (limit.rlim_cur < 2 * FD_SETSIZE) {
    limit.rlim_cur = std::min<rlim_t>(2 * FD_SETSIZE, limit.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur < FD_SETSIZE + 64) {
      GTEST_SKIP() << "the descriptor limit cannot reach past FD_SETSIZE here";
    }
  }
  std::vector<int> filler;  // every number below FD_SETSIZE taken: the client's sockets come after
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  filler.push_back(null_fd);
  for (int fd = ::dup(null_fd); fd >= 0; fd = ::dup(null_fd)) {
    filler.push_back(fd);
    if (fd >= FD_SETSIZE) break;
  }
  ASSERT_GE(filler.back(), FD_SETSIZE);
  make_client(peer_->base_url(), "", R"("timeout": "20s", "attempt_timeout": "20s")");
  for (int call = 0; call < 2; ++call) {  // a fresh connection, then the pooled one
    humus_request* req = request(peer_->url("/bytes/1000"));
    std::unique_ptr<Stepper> step = start(req);
    ASSERT_NE(step, nullptr);
    step->run();
    ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
    for (const Wait& w : step->waits) {
      EXPECT_GE(w.fd, 0) << "a wait for time alone (" << w.ms << " ms) where no backoff was due";
      EXPECT_LT(w.fd, FD_SETSIZE);
    }
    Body body = read_all(step->resp);
    EXPECT_EQ(body.status, HUMUS_OK) << body.error;
    EXPECT_EQ(body.sum.value(), humus::test::pattern_checksum(1000));
    step.reset();
    humus_request_free(req);
  }
  humus_client_free(client_);
  client_ = nullptr;
  for (int fd : filler) ::close(fd);
  ::setrlimit(RLIMIT_NOFILE, &saved);
}

TEST_F(StepPeerTest, ALargeBodyReadAfterTheStepComesExactly) {
  const uint64_t size = (kThreadSanitized ? 3 : 12) * kMiB + 13;
  make_client(peer_->base_url());
  const std::string path = "/bytes/" + std::to_string(size);
  humus_request* req = request(peer_->url(path));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  humus_response* resp = step->take_response();
  step.reset();  // the body outlives its step
  Body body = read_ready_all(resp, false);
  EXPECT_EQ(body.status, HUMUS_OK) << body.error;
  EXPECT_EQ(body.sum.bytes(), size);
  EXPECT_EQ(body.sum.value(), humus::test::pattern_checksum(size));
  humus_response_free(resp);
  EXPECT_EQ(counts().successes, 1u);
  EXPECT_EQ(peer_->count(path), 1u);
  humus_request_free(req);
}

TEST_F(StepPeerTest, ALargeUploadArrivesExactly) {
  const uint64_t size = (kThreadSanitized ? 2 : 8) * kMiB + 3;
  std::vector<uint8_t> data(size);
  humus::test::pattern_fill(0, data.data(), data.size());
  make_client(peer_->base_url());
  humus_request* req = request(peer_->url("/upload"), "POST");
  ASSERT_EQ(humus_request_set_body(req, data.data(), data.size()), HUMUS_OK);
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  step->run();
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(humus_response_status(step->resp), 200);
  Body body = read_ready_all(step->resp, true);
  EXPECT_EQ(body.text, std::to_string(size) + " " + std::to_string(humus::test::pattern_checksum(size)));
  EXPECT_EQ(peer_->count("/upload"), 1u);
  humus_request_free(req);
}

TEST_F(StepServerTest, StepsDrivenTogetherByAnotherThreadsPollerEachGetTheirOwnAnswer) {
  constexpr int kSteps = 4;
  make_client(url(""));
  std::vector<humus_request*> reqs;
  std::vector<std::unique_ptr<Stepper>> steps;
  for (int i = 0; i < kSteps; ++i) {
    const std::string path = "/many" + std::to_string(i);
    server().script(path, nlohmann::json::array({{{"status", 200 + i},
                                                   {"body", "answer " + std::to_string(i)},
                                                   {"delay_ms", 100 + 20 * i}}}));
    reqs.push_back(request(url(path)));
    steps.push_back(start(reqs.back()));
    ASSERT_NE(steps.back(), nullptr);
  }
  // One poller thread, not the starting one, drives every step over one poll() of all their descriptors.
  std::thread poller([&] {
    const auto until = std::chrono::steady_clock::now() + kGuard;
    std::vector<bool> waiting(kSteps, false);
    for (int i = 0; i < kSteps; ++i) waiting[i] = !steps[i]->advance();
    while (std::any_of(waiting.begin(), waiting.end(), [](bool w) { return w; }) &&
           std::chrono::steady_clock::now() < until) {
      std::vector<pollfd> fds;
      std::vector<int> owner;
      int64_t bound = 1000;
      for (int i = 0; i < kSteps; ++i) {
        if (!waiting[i]) continue;
        const Wait& w = steps[i]->last;
        if (w.ms >= 0) bound = std::min(bound, w.ms);
        if (w.fd < 0) continue;
        fds.push_back(pollfd{w.fd, poll_events(w.events), 0});
        owner.push_back(i);
      }
      ::poll(fds.data(), fds.size(), static_cast<int>(bound));
      // Advancing a step whose descriptor is not ready is harmless; every waiting step is advanced.
      for (int i = 0; i < kSteps; ++i) {
        if (waiting[i]) waiting[i] = !steps[i]->advance();
      }
    }
  });
  poller.join();
  for (int i = 0; i < kSteps; ++i) {
    ASSERT_NE(steps[i]->resp, nullptr) << i << ": " << humus_status_name(steps[i]->status) << " " << steps[i]->error;
    EXPECT_EQ(humus_response_status(steps[i]->resp), 200 + i);
    Body body = read_ready_all(steps[i]->resp, true);
    EXPECT_EQ(body.text, "answer " + std::to_string(i));
    EXPECT_GE(steps[i]->fd_waits(), 1);
  }
  steps.clear();
  for (humus_request* r : reqs) humus_request_free(r);
}

TEST_F(StepServerTest, AHedgingClientRunsTheWholeCallInsideTheFirstAdvance) {
  server().script("/hedged", nlohmann::json::array({{{"status", 200}, {"body", "hedged"}, {"delay_ms", 50}}}));
  make_client(url(""), R"(, "hedge": {"delay": "1s", "max": 2})");
  humus_request* req = request(url("/hedged"));
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  EXPECT_TRUE(step->advance());
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(step->waits.size(), 0u);
  EXPECT_EQ(humus_response_status(step->resp), 200);
  Body body = read_all(step->resp);
  EXPECT_EQ(body.text, "hedged");
  humus_request_free(req);
}

// The mock transport's answers: a 503 asking for a second first, then 200 "paid" after 250 ms.
struct Mocked {
  std::atomic<int> calls{0};
  static humus_status respond(void* user, const humus_mock_request*, humus_mock_reply* reply) {
    auto* m = static_cast<Mocked*>(user);
    if (++m->calls == 1) {
      humus_mock_reply_set_status(reply, 503);
      humus_mock_reply_add_header(reply, "Retry-After", "1");
      return HUMUS_OK;
    }
    humus_mock_reply_set_delay_ms(reply, 250);
    humus_mock_reply_set_status(reply, 200);
    humus_mock_reply_set_body(reply, "paid", 4);
    return HUMUS_OK;
  }
};

class StepVirtualClockTest : public ::testing::Test, protected StepFixture {
 protected:
  void SetUp() override {
    start_runtime(R"({"clock": "virtual", "seed": 1})");
    humus_mock_transport mock = HUMUS_MOCK_TRANSPORT_INIT;
    mock.respond = &Mocked::respond;
    mock.user_data = &mocked_;
    ASSERT_EQ(humus_runtime_set_mock_transport(rt_, &mock, nullptr), HUMUS_OK);
  }
  void TearDown() override { stop(); }
  Mocked mocked_;
};

TEST_F(StepVirtualClockTest, TheWholeCallRunsInsideTheFirstAdvance) {
  make_client("https://payments:8443", R"(, "max_retry_after": "5s")");
  humus_request* req = request("https://payments:8443/v1/charges");
  std::unique_ptr<Stepper> step = start(req);
  ASSERT_NE(step, nullptr);
  const int64_t before = humus_runtime_elapsed_ms(rt_);
  EXPECT_TRUE(step->advance());
  ASSERT_NE(step->resp, nullptr) << humus_status_name(step->status) << ": " << step->error;
  EXPECT_EQ(step->waits.size(), 0u);
  EXPECT_EQ(humus_response_status(step->resp), 200);
  EXPECT_EQ(humus_response_attempts(step->resp), 2);
  EXPECT_EQ(humus_runtime_elapsed_ms(rt_) - before, 1250);  // the Retry-After and the delay, on the virtual clock
  EXPECT_EQ(mocked_.calls.load(), 2);
  Body body = read_all(step->resp);
  EXPECT_EQ(body.status, HUMUS_OK) << body.error;
  EXPECT_EQ(body.text, "paid");
  humus_request_free(req);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
