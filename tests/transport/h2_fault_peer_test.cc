// The fault catalogue's HTTP/2 connection-level cases (tests/fault-coverage.md) against
// tests/support/h2_fault_peer.py, a peer that breaks what the scriptable test server keeps: an upload window
// that never opens, one concurrent stream, a peer gone silent, a CONTINUATION flood.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "support/test_server.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using humus::test::H2FaultPeer;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class H2FaultPeerTest : public ::testing::Test {
 protected:
  // A client of https://payments:PORT, the name resolved to the peer, trusting the test CA only.
  std::unique_ptr<Client> make(const H2FaultPeer& peer, settings::Settings s = {}) {
    const std::string host_port = "payments:" + std::to_string(peer.port());
    RuntimeOptions o;
    o.resolve.emplace_back(host_port, "127.0.0.1:" + std::to_string(peer.port()));
    runtime_ = std::make_unique<Runtime>(o);
    s.base_url = "https://" + host_port;
    s.backoff_base = milliseconds(1);
    s.backoff_max = milliseconds(2);
    s.tls.emplace();
    s.tls->ca_file = peer.ca_file();
    Result<std::unique_ptr<Client>> c = Client::create(*runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // One attempt, with deadlines of 10 s: only a test's own shorter deadline, or a cancel, ends a call.
  static settings::Settings single_attempt() {
    settings::Settings s;
    s.timeout = milliseconds(10000);
    s.attempt_timeout = milliseconds(10000);
    s.max_attempts = 1;
    return s;
  }

  // A call of 2.5 s whose attempts, dial included, last `attempt` each.
  static settings::Settings deadlines(milliseconds attempt) {
    settings::Settings s;
    s.timeout = milliseconds(2500);
    s.attempt_timeout = attempt;
    s.connect_timeout = attempt;
    return s;
  }

  static Request req(const H2FaultPeer& peer, std::string method = "GET") {
    Request r;
    r.method = std::move(method);
    r.url = "https://payments:" + std::to_string(peer.port()) + "/";
    return r;
  }

  // A call submitted to the client's event loop, its result waited for.
  static std::future<CallResult> submit(Client& c, Request r, bool open = false) {
    auto promise = std::make_shared<std::promise<CallResult>>();
    std::future<CallResult> result = promise->get_future();
    auto done = [promise](CallResult out) { promise->set_value(std::move(out)); };
    if (open) {
      c.submit_open(std::move(r), std::move(done));
    } else {
      c.submit(std::move(r), std::move(done));
    }
    return result;
  }

  static Request at(const H2FaultPeer& peer, const std::string& path, milliseconds timeout = milliseconds(0)) {
    Request r = req(peer);
    r.url += path.substr(1);
    if (timeout.count() > 0) r.timeout = timeout;
    return r;
  }

  // The abandon peer's /hold is answered once the client resets another stream of its connection (or after
  // 3 s): a /hold call ended with a reset while it was open shows the reset went out before it ended, and
  // that a hold was released by it.
  static void expect_reset_while_shared(const nlohmann::json& seen) {
    EXPECT_EQ(seen["connections"], 1) << "the calls did not share one connection";
    EXPECT_EQ(seen["resets"], 1) << "the abandoned stream was not reset";
    EXPECT_EQ(seen["resets_shared"], 1)
        << "the abandoned stream's RST_STREAM reached the server only after the connection's other stream ended";
    EXPECT_EQ(seen["holds_released"], 1);
    EXPECT_EQ(seen["open_now"], 0) << "a stream is still open at the server";
  }

  std::unique_ptr<Runtime> runtime_;
};

// The peer's window for the upload is 0 and never opens: not a byte of the body can go out, so the attempt
// ends at attempt_timeout (HUMUS_E_TIMEOUT, docs/timeouts.md §8), a PUT is retried, and each attempt is a
// breaker failure.
// F96
TEST_F(H2FaultPeerTest, AnUploadTheFlowControlWindowNeverLetsOutEndsAtTheAttemptTimeout) {
  H2FaultPeer peer("window0");
  settings::Settings s = deadlines(milliseconds(300));
  s.timeout = milliseconds(30000);  // only the attempts' timeouts can end it
  s.max_attempts = 2;
  auto c = make(peer, s);
  Request r = req(peer, "PUT");
  r.body = std::make_shared<const std::string>(100 * 1024, 'u');
  const auto t0 = Clock::now();
  CallResult out = c->execute(r);
  const auto took = Clock::now() - t0;
  ASSERT_FALSE(out.ok()) << out.response->status;
  EXPECT_EQ(out.error.code(), Code::kTimeout) << out.error.message();
  EXPECT_NE(out.error.message().find("attempt timed out before the response headers"), std::string::npos)
      << out.error.message();
  EXPECT_EQ(out.attempts, 2);
  EXPECT_GE(took, milliseconds(550));
  EXPECT_EQ(c->breaker().counts().failures, 2u);
  const nlohmann::json seen = peer.finish();
  EXPECT_EQ(seen["requests"], 2);
  EXPECT_EQ(seen["ended"], 0) << "a request body went out whole through a window of 0";
  EXPECT_EQ(seen["body_bytes_after_ack"], 0) << "the client sent body bytes past a window of 0 it knew";
}

// The peer allows one stream at a time (SETTINGS_MAX_CONCURRENT_STREAMS=1) and refuses any other with
// REFUSED_STREAM: five concurrent calls all succeed, and the client never opens a second stream on a
// connection once it knows the limit.
// F97, S24
TEST_F(H2FaultPeerTest, FiveConcurrentCallsToAPeerAllowingOneStreamAllSucceed) {
  H2FaultPeer peer("streams1");
  settings::Settings s;
  // A stream refused before its connection's limit was known is retried, and the retry may land on a new
  // connection whose limit is not known yet either: each connection serves at least its first stream, so
  // five calls need at most five attempts each, whatever the timing (a loaded or sanitized run included).
  s.max_attempts = 5;
  s.policy_params.consecutive_failures = 100;
  s.policy_params.min_results = 100;
  s.retry_budget.tokens = 1000;
  auto c = make(peer, s);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<CallResult> done;
  for (int i = 0; i < 5; ++i) {
    c->submit(req(peer), [&](CallResult r) {
      std::lock_guard<std::mutex> lock(mu);
      done.push_back(std::move(r));
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return done.size() == 5; }));
  for (const CallResult& r : done) {
    ASSERT_TRUE(r.ok()) << r.error.message();
    EXPECT_EQ(r.response->status, 200);
    EXPECT_EQ(r.response->body, "ok");
  }
  lock.unlock();
  const nlohmann::json seen = peer.finish();
  EXPECT_EQ(seen["excess_after_ack"], 0) << "a second stream on a connection whose limit of 1 was known";
  EXPECT_EQ(seen["max_open"], 1);
}

// The peer answers once, then stops responding on that connection — no answer, no PING ACK — and leaves it
// open. The client sends no keep-alive PINGs (docs/transport.md §10.7): the next call's attempt on the silent
// connection ends at attempt_timeout, the connection is dropped, and the retry on a new one succeeds.
// F99
TEST_F(H2FaultPeerTest, APeerThatStopsRespondingIsLeftAfterOneAttemptTimeout) {
  H2FaultPeer peer("silent");
  auto c = make(peer, deadlines(milliseconds(300)));
  CallResult first = c->execute(req(peer));
  ASSERT_TRUE(first.ok()) << first.error.message();
  EXPECT_EQ(first.response->http_version, "2");
  CallResult second = c->execute(req(peer));
  ASSERT_TRUE(second.ok()) << second.error.message();
  EXPECT_EQ(second.response->attempts, 2);
  EXPECT_EQ(c->breaker().counts().failures, 1u);
  const nlohmann::json seen = peer.finish();
  EXPECT_EQ(seen["connections"], 2);
  EXPECT_EQ(seen["requests"], 2) << "the silent peer reads no request after its first answer";
}

// HEADERS without END_HEADERS, then empty CONTINUATION frames without end (nghttp2 CVE-2024-28182): the
// attempt ends long before the flood does, within the attempt's deadline, as the peer breaking HTTP/2
// (HUMUS_E_PROTOCOL: not retried, a breaker failure).
// F100, S24
TEST_F(H2FaultPeerTest, AContinuationFloodEndsTheAttemptAsAProtocolError) {
  H2FaultPeer peer("continuation");
  settings::Settings s = deadlines(milliseconds(20000));  // no deadline ends it: nghttp2's limit does
  s.timeout = milliseconds(30000);
  auto c = make(peer, s);
  CallResult out = c->execute(req(peer));
  ASSERT_FALSE(out.ok()) << out.response->status;
  EXPECT_EQ(out.error.code(), Code::kProtocol) << out.error.message();
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(c->breaker().counts().failures, 1u);
  const nlohmann::json seen = peer.finish();
  EXPECT_LT(seen["continuations"].get<int>(), 1000000) << "the client read the whole flood";
}

// Two asynchronous calls on one HTTP/2 connection: one the server holds, one that hangs until its deadline.
// The abandoned attempt's stream is reset on the wire at once (RST_STREAM), while the other stream is still
// open, not when the connection's other streams end: the server holds no stream of a call that gave its
// bulkhead slot back (docs/transport.md §10.7). The held call goes on, answered.
// F134
TEST_F(H2FaultPeerTest, AnAttemptAbandonedOnASharedConnectionResetsItsStreamAtOnce) {
  H2FaultPeer peer("abandon");
  auto c = make(peer, single_attempt());
  CallResult warm = submit(*c, at(peer, "/ok")).get();  // the connection both calls share
  ASSERT_TRUE(warm.ok()) << warm.error.message();
  ASSERT_EQ(warm.response->http_version, "2");
  std::future<CallResult> held = submit(*c, at(peer, "/hold"));
  CallResult hung = submit(*c, at(peer, "/hang", milliseconds(500))).get();
  EXPECT_EQ(hung.error.code(), Code::kTimeout) << hung.error.message();
  CallResult answered = held.get();
  ASSERT_TRUE(answered.ok()) << answered.error.message();
  EXPECT_EQ(answered.response->body, "ok");
  expect_reset_while_shared(peer.finish());
}

// The same for a body streamed on the loop: an attempt whose head never comes is cut at its deadline, and a
// body dropped half-read, each while another stream of the connection is open.
// F134
TEST_F(H2FaultPeerTest, AStreamedAttemptAbandonedOnASharedConnectionResetsItsStreamAtOnce) {
  for (const std::string path : {"/hang", "/stall"}) {
    SCOPED_TRACE(path);
    H2FaultPeer peer("abandon");
    auto c = make(peer, single_attempt());
    CallResult warm = submit(*c, at(peer, "/ok")).get();
    ASSERT_TRUE(warm.ok()) << warm.error.message();
    std::future<CallResult> held = submit(*c, at(peer, "/hold"));
    // /hang: the head never comes (kTimeout); /stall: the head comes, and the body is dropped unread when
    // the result is, on the loop thread.
    CallResult cut = submit(*c, at(peer, path, milliseconds(500)), /*open=*/true).get();
    if (path == "/hang") {
      EXPECT_EQ(cut.error.code(), Code::kTimeout) << cut.error.message();
    } else {
      EXPECT_TRUE(cut.ok()) << cut.error.message();
    }
    CallResult answered = held.get();
    ASSERT_TRUE(answered.ok()) << answered.error.message();
    expect_reset_while_shared(peer.finish());
  }
}

// A blocking call cancelled on an HTTP/2 connection: no other transfer shares a lane's connection, so the
// lane closes it at once rather than leave the reset in libcurl's buffer until its next request; the server
// holds no stream of the cancelled call.
// F134
TEST_F(H2FaultPeerTest, ACancelledBlockingCallLeavesNoStreamOpenAtTheServer) {
  H2FaultPeer peer("abandon");
  auto c = make(peer, single_attempt());
  CallResult warm = c->execute(at(peer, "/ok"));
  ASSERT_TRUE(warm.ok()) << warm.error.message();
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(500));  // the request is out on the pooled connection by then,
    cancel.cancel();                                 // but for a machine too loaded to send it: see below
  });
  CallResult out = c->execute(at(peer, "/hang"), &cancel);
  canceller.join();
  EXPECT_EQ(out.error.code(), Code::kCancelled) << out.error.message();
  const nlohmann::json seen = peer.finish();  // the client, and its lanes, still alive
  const int hung = seen["requests"].get<int>() - 1;  // 0 only if the cancel came before the request went out
  EXPECT_GE(hung, 0);
  EXPECT_EQ(seen["open_now"], 0) << "the cancelled call's stream is still open at the server";
  EXPECT_EQ(seen["resets"].get<int>() + seen["dropped_open"].get<int>(), hung);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
