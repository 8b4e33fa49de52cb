// HTTP/2 peers that break the protocol after reading a request whole (tests/support/h2_hostile_peer.py):
// connection-level violations, malformed response heads, a legal head of 48 KB, refused and unprocessed
// streams. Every case runs eight ways — on a fresh connection and on one an earlier call left pooled,
// blocking and asynchronous, a GET and a POST without an Idempotency-Key — and in every run the requests
// the peer read equal the attempts the client reported, and an unkeyed POST is processed at most once
// (docs/transport.md §10.7–10.8, docs/retries.md §4).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "classify/attempt_hooks.h"
#include "client/client.h"
#include "humus_http.h"
#include "support/test_server.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using humus::test::H2FaultPeer;
using std::chrono::milliseconds;

// Where the fault meets the call: its own new connection, or the one a successful call left in the pool.
enum class Conn { kFresh, kPooled };
enum class Drive { kBlocking, kAsync };

struct Way {
  Conn conn;
  Drive drive;
  const char* method;
};

constexpr Way kWays[] = {
    {Conn::kFresh, Drive::kBlocking, "GET"},  {Conn::kFresh, Drive::kBlocking, "POST"},
    {Conn::kFresh, Drive::kAsync, "GET"},     {Conn::kFresh, Drive::kAsync, "POST"},
    {Conn::kPooled, Drive::kBlocking, "GET"}, {Conn::kPooled, Drive::kBlocking, "POST"},
    {Conn::kPooled, Drive::kAsync, "GET"},    {Conn::kPooled, Drive::kAsync, "POST"},
};

std::string describe(const Way& w) {
  return std::string(w.method) + (w.conn == Conn::kFresh ? " fresh " : " pooled ") +
         (w.drive == Drive::kBlocking ? "blocking" : "async");
}

std::string name(Code code) { return humus_status_name(static_cast<humus_status>(code)); }

// Each attempt's transport error, in order (kOk for an attempt that got an answer).
class AttemptLog : public classify::AttemptHooks {
 public:
  Status before(classify::AttemptRequest& /*request*/) const override { return Status::Ok(); }
  void after(const classify::Attempt& attempt) const override {
    std::lock_guard<std::mutex> lock(mu_);
    errors_.push_back(attempt.error);
  }
  std::vector<Code> errors() const {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::vector<Code> errors_;  // guarded by mu_; hooks are const, and run on the driver's thread
};

// A peer's mode and how long it keeps at it.
struct Case {
  const char* mode;
  int faults = 0;  // faults the peer sends at most; 0: every request from the faulted one on gets one
  int max_attempts = 3;
};

// One call against the peer, and the peer's side of it.
struct Outcome {
  Way way;
  CallResult out;
  std::vector<Code> attempt_errors;
  nlohmann::json seen;  // the peer's counters
  int warmup_attempts = 0;
  uint64_t breaker_failures = 0;

  bool post() const { return std::string_view(way.method) == "POST"; }

  // What the report of a failing run needs: outcome, each attempt's error, and what the peer read.
  std::string text() const {
    std::ostringstream o;
    o << describe(way) << ": " << (out.ok() ? "HTTP " + std::to_string(out.response->status) : name(out.error.code()))
      << " after " << out.attempts << " attempt(s) [";
    for (Code c : attempt_errors) o << ' ' << name(c);
    o << " ]" << (out.ok() ? "" : " \"" + out.error.message() + "\"") << "; breaker failures " << breaker_failures;
    if (seen.is_object()) {
      o << "; peer read " << seen["requests"] << " request(s) (" << seen["posts"] << " POST, "
        << seen["posts_refused"] << " refused) on connections " << seen["per_connection"];
    }
    return o.str();
  }
};

class H2HostilePeerTest : public ::testing::Test {
 protected:
  // Runs the case every way, each against a peer of its own, checks the invariants every case keeps, then
  // `check`. A failure names the way and what the run came to (the run's text is also a test property, for
  // --gtest_output=xml).
  static void every_way(const Case& c, const std::function<void(const Outcome&)>& check) {
    for (const Way& way : kWays) {
      const Outcome r = run(c, way);
      SCOPED_TRACE(r.text());
      RecordProperty(describe(way), r.text());
      expect_wire_matches_attempts(r);
      check(r);
    }
  }

  // The peer broke HTTP/2: the call ends with one of `codes` after one attempt whatever the method, and
  // kProtocol is a breaker failure (docs/retries.md §10.7) while kTooLarge is no verdict.
  static void expect_broken_every_way(const Case& c, std::initializer_list<Code> codes) {
    every_way(c, [&codes](const Outcome& r) {
      ASSERT_FALSE(r.out.ok());
      EXPECT_TRUE(std::find(codes.begin(), codes.end(), r.out.error.code()) != codes.end()) << "another status";
      EXPECT_EQ(r.out.attempts, 1);
      EXPECT_EQ(r.breaker_failures, r.out.error.code() == Code::kProtocol ? 1u : 0u);
    });
  }

  // The peer refused the stream (never processed it): that attempt is kStreamRefused, and the request,
  // a POST too, is sent again; the peer answers the second attempt.
  static void expect_refused_then_answered_every_way(const char* mode) {
    every_way({mode, /*faults=*/1, /*max_attempts=*/2}, [](const Outcome& r) {
      ASSERT_TRUE(r.out.ok());
      EXPECT_EQ(r.out.response->status, 200);
      EXPECT_EQ(r.out.response->body, "ok");
      EXPECT_EQ(r.out.attempts, 2);
      ASSERT_EQ(r.attempt_errors.size(), 2u);
      EXPECT_EQ(r.attempt_errors[0], Code::kStreamRefused);
      EXPECT_EQ(r.seen["posts_refused"].get<int>(), r.post() ? 1 : 0);
    });
  }

  // A 48 KB head is answered at once: the call succeeds, in one attempt, with every field and the body,
  // within deadlines (an attempt of a few seconds) it would otherwise reach.
  static void expect_big_head_answered_every_way(const char* mode) {
    every_way({mode}, [](const Outcome& r) {
      ASSERT_TRUE(r.out.ok());
      EXPECT_EQ(r.out.response->status, 200);
      EXPECT_EQ(r.out.response->body, "ok");
      EXPECT_EQ(r.out.attempts, 1);
      const std::string* last = r.out.response->headers.find("x-fill-47");
      ASSERT_NE(last, nullptr);
      EXPECT_EQ(*last, std::string(1000, 'f'));
    });
  }

 private:
  // One call the way `way` says, against a peer in `c.mode` whose fault meets that call: in the pooled case
  // a first call, answered, leaves its connection in the pool.
  static Outcome run(const Case& c, const Way& way) {
    std::vector<std::string> options = {"--fault-from", way.conn == Conn::kPooled ? "2" : "1"};
    if (c.faults > 0) options.insert(options.end(), {"--faults", std::to_string(c.faults)});
    H2FaultPeer peer(c.mode, options, H2FaultPeer::kHostile);
    Outcome r{way, {}, {}, {}, 0, 0};
    {
      const std::string host_port = "payments:" + std::to_string(peer.port());
      RuntimeOptions o;
      o.resolve.emplace_back(host_port, "127.0.0.1:" + std::to_string(peer.port()));
      Runtime runtime(o);
      auto client = make(runtime, peer, c.max_attempts);
      if (!client) return r;
      if (way.conn == Conn::kPooled) {
        // Driven as the call is: the blocking and the asynchronous drivers pool their connections apart.
        CallResult warm = call(*client, request(peer, "GET"), way.drive);
        EXPECT_TRUE(warm.ok()) << "the warm-up call: " << warm.error.message();
        r.warmup_attempts = warm.attempts;
      }
      Request req = request(peer, way.method);
      auto log = std::make_shared<AttemptLog>();
      req.attempt_hooks = log;
      r.out = call(*client, std::move(req), way.drive);
      r.attempt_errors = log->errors();
      r.breaker_failures = client->breaker().counts().failures;
    }
    r.seen = peer.finish();
    return r;
  }

  // What every case keeps (docs/transport.md §10.8): the requests the peer read are the attempts the client
  // reported, the pooled case's warm-up included; an unkeyed POST is processed at most once (one the peer
  // refused was not processed); and the pooled case did meet its fault on the pooled connection.
  static void expect_wire_matches_attempts(const Outcome& r) {
    EXPECT_EQ(r.seen["requests"].get<int>(), r.warmup_attempts + r.out.attempts)
        << "requests on the wire differ from the attempts reported";
    if (r.post()) {
      EXPECT_LE(r.seen["posts"].get<int>() - r.seen["posts_refused"].get<int>(), 1)
          << "an unkeyed POST was processed more than once";
    }
    if (r.way.conn == Conn::kPooled) {
      EXPECT_GE(r.seen["per_connection"][0].get<int>(), 2) << "the call did not reuse the pooled connection";
    }
  }

  // A client of https://payments:PORT, the name resolved to the peer, trusting the test CA only, with
  // deadlines of a few seconds that no case needs to reach, and a breaker and budget that stay out of the way.
  static std::unique_ptr<Client> make(Runtime& runtime, const H2FaultPeer& peer, int max_attempts) {
    settings::Settings s;
    s.base_url = "https://payments:" + std::to_string(peer.port());
    s.timeout = milliseconds(5000);
    s.attempt_timeout = milliseconds(3000);
    s.connect_timeout = milliseconds(2000);
    s.max_attempts = max_attempts;
    s.backoff_base = milliseconds(1);
    s.backoff_max = milliseconds(2);
    s.policy_params.consecutive_failures = 100;
    s.policy_params.min_results = 100;
    s.retry_budget.tokens = 1000;
    s.tls.emplace();
    s.tls->ca_file = peer.ca_file();
    Result<std::unique_ptr<Client>> c = Client::create(runtime, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Request request(const H2FaultPeer& peer, const std::string& method) {
    Request r;
    r.method = method;
    r.url = "https://payments:" + std::to_string(peer.port()) + "/pay";
    if (method == "POST") r.body = std::make_shared<const std::string>("amount=1");
    return r;
  }

  // Client::execute on this thread, or Client::submit and a wait for its `done` on the loop thread.
  static CallResult call(Client& c, Request req, Drive drive) {
    if (drive == Drive::kBlocking) return c.execute(req);
    auto done = std::make_shared<std::promise<CallResult>>();
    std::future<CallResult> result = done->get_future();
    c.submit(std::move(req), [done](CallResult r) { done->set_value(std::move(r)); });
    return result.get();  // the call's own timeout bounds the wait
  }
};

// --- 1. Connection-level violations after the request was read: the peer broke HTTP/2. -------------------

// F113
TEST_F(H2HostilePeerTest, AnEndlessContinuationSequenceIsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"continuation"}, {Code::kProtocol});
}

// F114
TEST_F(H2HostilePeerTest, AnHpackBombIsTooLargeOrAProtocolErrorInOneAttemptEveryWay) {
  expect_broken_every_way({"hpack_bomb"}, {Code::kTooLarge, Code::kProtocol});
}

// F115
TEST_F(H2HostilePeerTest, AnInitialWindowSizeOver2To31Minus1IsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"settings_window"}, {Code::kProtocol});
}

// F116
TEST_F(H2HostilePeerTest, DataOnStreamZeroIsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"data_stream0"}, {Code::kProtocol});
}

// F117
TEST_F(H2HostilePeerTest, AFrameOverMaxFrameSizeIsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"oversized_frame"}, {Code::kProtocol});
}

// F118
TEST_F(H2HostilePeerTest, Http11BytesAfterAlpnChoseH2AreOneProtocolErrorEveryWay) {
  expect_broken_every_way({"http1"}, {Code::kProtocol});
}

// F119
TEST_F(H2HostilePeerTest, APushPromiseWithPushDisabledIsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"push_promise"}, {Code::kProtocol});
}

// --- 2. Malformed response heads (RFC 9113 §8.2, §8.3.2): a protocol error, not a lost connection. ---------

// F120
TEST_F(H2HostilePeerTest, AnUppercaseFieldNameIsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"head_uppercase"}, {Code::kProtocol});
}

// F121
TEST_F(H2HostilePeerTest, AConnectionFieldIsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"head_connection"}, {Code::kProtocol});
}

// F122
TEST_F(H2HostilePeerTest, ATransferEncodingFieldIsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"head_transfer_encoding"}, {Code::kProtocol});
}

// F123
TEST_F(H2HostilePeerTest, AHeadWithoutStatusIsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"head_no_status"}, {Code::kProtocol});
}

// F124
TEST_F(H2HostilePeerTest, AStatusOfLettersIsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"head_status_abc"}, {Code::kProtocol});
}

// F125
TEST_F(H2HostilePeerTest, AStatusOfFourDigitsIsOneProtocolErrorEveryWay) {
  expect_broken_every_way({"head_status_2000"}, {Code::kProtocol});
}

// --- 3. A legal header block of 48 KB, under max_response_headers (64 KiB), in HEADERS + CONTINUATION. ------

// F126
TEST_F(H2HostilePeerTest, A48KbHeaderBlockWithoutContentLengthIsAnsweredAtOnceEveryWay) {
  expect_big_head_answered_every_way("big_head");
}

// F127
TEST_F(H2HostilePeerTest, A48KbHeaderBlockWithAContentLengthIsAnsweredAtOnceEveryWay) {
  expect_big_head_answered_every_way("big_head_length");
}

// --- 4. Refusals: safe to send again whatever the method only when the peer said it did not process it. ----

// RST_STREAM(REFUSED_STREAM) after the request was read whole (RFC 9113 §8.7).
// F128
TEST_F(H2HostilePeerTest, ARefusedStreamIsSentAgainAndAnsweredEveryWay) {
  expect_refused_then_answered_every_way("refuse");
}

// GOAWAY(NO_ERROR) whose last_stream_id is below the stream, then the connection closes: the second
// attempt goes to a new connection.
// F129
TEST_F(H2HostilePeerTest, AGoawayBelowTheStreamIsARefusalSentAgainOnANewConnectionEveryWay) {
  expect_refused_then_answered_every_way("goaway_below");
}

// GOAWAY(NO_ERROR) whose last_stream_id covers the stream — the peer may have processed it — then the
// connection closes without an answer: a lost connection, so a GET is sent again (and answered) and an
// unkeyed POST is not.
// F130
TEST_F(H2HostilePeerTest, AGoawayCoveringTheStreamThenACloseIsALostConnectionRetriedForGetOnly) {
  every_way({"goaway_covering", /*faults=*/1, /*max_attempts=*/2}, [](const Outcome& r) {
    ASSERT_FALSE(r.attempt_errors.empty());
    EXPECT_EQ(r.attempt_errors[0], Code::kConnectionLost);
    if (r.post()) {
      ASSERT_FALSE(r.out.ok());
      EXPECT_EQ(r.out.error.code(), Code::kConnectionLost);
      EXPECT_EQ(r.out.attempts, 1);
      EXPECT_EQ(r.seen["posts"].get<int>(), 1);
    } else {
      ASSERT_TRUE(r.out.ok());
      EXPECT_EQ(r.out.response->body, "ok");
      EXPECT_EQ(r.out.attempts, 2);
    }
  });
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
