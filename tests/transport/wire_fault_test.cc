// The fault catalogue's wire cases (tests/fault-coverage.md) against raw loopback peers: framing that lies,
// connections that die at each step, peers that stall, redirects that leave the origin. Each test names the
// ids it covers and checks what the caller got, how many requests reached the peer and what the breaker saw.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "support/raw_peer.h"
#include "support/read_through.h"
#include "support/sanitizers.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using humus::test::BodyMode;
using humus::test::call_with;
using humus::test::RawConnection;
using humus::test::RawPeer;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

// Answers every request on a connection with `reply`, once per request read.
RawPeer::Handler always(std::string reply) {
  return [reply = std::move(reply)](RawConnection& c) {
    while (c.read_request()) c.write(reply);
  };
}

// Reads one request, writes `reply`, then closes (FIN) when `then_reset` is false, or resets.
RawPeer::Handler once(std::string reply, bool then_reset = false) {
  return [reply = std::move(reply), then_reset](RawConnection& c) {
    if (!c.read_request()) return;
    c.write(reply);
    if (then_reset) c.reset();
  };
}

// Holds the connection, silent, reading and dropping what comes, until the client leaves or `max_ms` pass.
void hold_until_the_client_leaves(RawConnection& c, int max_ms) {
  const auto until = Clock::now() + milliseconds(max_ms);
  char buf[4096];
  while (Clock::now() < until) {
    pollfd p{c.fd(), POLLIN, 0};
    if (::poll(&p, 1, 100) > 0 && ::recv(c.fd(), buf, sizeof buf, 0) <= 0) return;
  }
}

// Whether the client's error message says the attempt's own timeout ended it, or the call's deadline.
bool by_attempt_timeout(const CallResult& r) {
  return r.error.message().find("attempt timed out before the response headers") != std::string::npos;
}
bool by_call_deadline(const CallResult& r) {
  return r.error.message().find("the call's deadline passed") != std::string::npos;
}

// Reads one request, writes `reply`, then holds the connection open, silent, until the client leaves.
RawPeer::Handler then_stall(std::string reply) {
  return [reply = std::move(reply)](RawConnection& c) {
    if (!c.read_request()) return;
    c.write(reply);
    while (!c.read_some(10'000).empty()) {
    }
  };
}

class WireFaultTest : public ::testing::Test {
 protected:
  std::unique_ptr<Client> make(const RawPeer& peer, settings::Settings s = {}, const char* scheme = "http") {
    s.base_url = std::string(scheme) + "://127.0.0.1:" + std::to_string(peer.port());
    s.backoff_base = milliseconds(1);
    s.backoff_max = milliseconds(2);
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Request req(const RawPeer& peer, std::string method = "GET", std::string path = "/") {
    Request r;
    r.method = std::move(method);
    r.url = peer.url(path);
    if (r.method == "POST") r.body = std::make_shared<const std::string>("{\"n\": 1}");
    return r;
  }

  static Request https_req(const RawPeer& peer) {
    Request r;
    r.url = "https://127.0.0.1:" + std::to_string(peer.port()) + "/";
    return r;
  }

  static std::string what(const CallResult& r) {
    if (!r.ok()) return "<" + r.error.message() + ">";
    return std::to_string(r.response->status) + " " + r.response->body;
  }

  // A GET through a peer that breaks the same way on every connection: `code`, after `attempts` attempts
  // that all reached the peer, and every one a breaker failure. Streamed, the same failure and the same
  // counts — but an answer whose body breaks off after its head was handed over is not retried.
  void expect_failure(const std::string& reply, Code code, int attempts, bool reset = false) {
    for (const BodyMode mode : humus::test::kEveryBodyMode) {
      SCOPED_TRACE(to_string(mode) + ": " + reply.substr(0, 60));
      RawPeer peer(once(reply, reset));
      auto c = make(peer);
      CallResult out = call_with(*c, req(peer), mode);
      ASSERT_FALSE(out.ok()) << "got " << what(out);
      EXPECT_EQ(out.error.code(), code) << out.error.message();
      if (mode == BodyMode::kBuffered) {
        EXPECT_EQ(out.attempts, attempts);
      } else {
        // Retried while the break comes before the head is handed over: on the loop, also while a small
        // body is read ahead (docs/bodies.md §7), which a timing of the peer's writes may or may not catch.
        EXPECT_GE(out.attempts, 1);
        EXPECT_LE(out.attempts, attempts);
      }
      EXPECT_EQ(peer.requests(), out.attempts);
      EXPECT_EQ(c->breaker().counts().failures, static_cast<uint64_t>(out.attempts));
    }
  }

  // Two GETs through a peer that answers every request with `reply`: each call gets `want` however it takes
  // its body, and the second goes out on a new connection: the first one's leftovers are never read as its
  // answer (`why` says what reuse would mean).
  void expect_two_answers(const std::string& reply, const std::string& want, const char* why) {
    for (const BodyMode mode : humus::test::kEveryBodyMode) {
      SCOPED_TRACE(to_string(mode));
      RawPeer peer(always(reply));
      auto c = make(peer);
      EXPECT_EQ(what(call_with(*c, req(peer), mode)), want);
      std::this_thread::sleep_for(milliseconds(50));  // whatever the peer left is on the idle connection
      EXPECT_EQ(what(call_with(*c, req(peer), mode)), want);
      EXPECT_EQ(peer.connections(), 2) << why;
      EXPECT_EQ(peer.requests(), 2);
    }
  }

  Runtime runtime_{RuntimeOptions{}};
};

// F01: a name that does not resolve (RFC 6761 `.invalid`): a resolve error, retried, each a breaker failure
// (docs/retries.md §5.3); nothing is dialled.
TEST_F(WireFaultTest, AnUnresolvableNameIsAResolveErrorRetriedAndABreakerFailure) {
  settings::Settings s;
  s.base_url = "http://humus-no-such-host.invalid:80";
  s.backoff_base = milliseconds(1);
  s.backoff_max = milliseconds(2);
  Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
  ASSERT_TRUE(c.ok()) << c.status().message();
  Request r;
  r.url = s.base_url + "/";
  CallResult out = (*c)->execute(r);
  ASSERT_FALSE(out.ok()) << what(out);
  EXPECT_EQ(out.error.code(), Code::kResolve) << out.error.message();
  EXPECT_EQ(out.attempts, 3);
  EXPECT_EQ((*c)->breaker().counts().failures, 3u);
}

// --- A connection that dies before the answer is complete: lost, retried for a GET. ---------------------

// F36
TEST_F(WireFaultTest, CloseBeforeTheStatusLineIsConnectionLostAndRetried) {
  expect_failure("", Code::kConnectionLost, 3);
}

// F37
TEST_F(WireFaultTest, ResetBeforeTheStatusLineIsConnectionLostAndRetried) {
  expect_failure("", Code::kConnectionLost, 3, /*reset=*/true);
}

// F38
TEST_F(WireFaultTest, ResetMidHeadersIsConnectionLostAndRetried) {
  expect_failure("HTTP/1.1 200 OK\r\nContent-Type: text/pl", Code::kConnectionLost, 3, /*reset=*/true);
}

// F39
TEST_F(WireFaultTest, ResetMidBodyIsConnectionLostAndRetried) {
  expect_failure("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n" + std::string(100000, 'x'),
                 Code::kConnectionLost, 3, /*reset=*/true);
}

// F40
TEST_F(WireFaultTest, ContentLengthLongerThanTheBodyIsConnectionLostNeverAShortBody) {
  expect_failure("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhello", Code::kConnectionLost, 3);
}

// F44
TEST_F(WireFaultTest, ChunkedBodyCutMidChunkIsConnectionLost) {
  expect_failure("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\nwor",
                 Code::kConnectionLost, 3);
}

// F45
TEST_F(WireFaultTest, ChunkedBodyWithoutTheLastChunkIsConnectionLost) {
  expect_failure("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
                 Code::kConnectionLost, 3);
}

// --- A peer that breaks the framing: protocol error, one attempt, a breaker failure. --------------------

// A malformed chunk size is the peer breaking HTTP (docs/transport.md §10.7): not retried.
// F46, S16
TEST_F(WireFaultTest, InvalidChunkSizeIsAProtocolError) {
  expect_failure("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
                 Code::kProtocol, 1);
}

// As F46: a chunk size past 64 bits.
// F47, S16
TEST_F(WireFaultTest, ChunkSizeOverflowIsAProtocolError) {
  expect_failure(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF1\r\nhello\r\n0\r\n\r\n",
      Code::kProtocol, 1);
}

// F48, S16
TEST_F(WireFaultTest, NegativeContentLengthIsAProtocolError) {
  expect_failure("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nhello", Code::kProtocol, 1);
}

// F51, S16
TEST_F(WireFaultTest, NulInAResponseHeaderIsAProtocolError) {
  constexpr char kReply[] = "HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 2\r\n\r\nok";
  expect_failure(std::string(kReply, sizeof kReply - 1), Code::kProtocol, 1);
}

// --- Framing that is odd but well defined: the answer arrives, and no leftover is read as the next one. ---

// F41
TEST_F(WireFaultTest, ContentLengthShorterThanTheBodyGivesThatManyBytesAndANewConnection) {
  expect_two_answers(
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
      "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL",
      "200 ok", "the connection with bytes left over was reused");
}

// A response framed two ways (Content-Length and Transfer-Encoding) is a smuggling sign (RFC 9112 §6.3):
// the chunked body is used and the connection closed.
// F43, S16
TEST_F(WireFaultTest, ContentLengthWithChunkedUsesTheChunkedBodyAndDoesNotReuseTheConnection) {
  expect_two_answers(
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n0\r\n\r\n",
      "200 hello", "a message framed two ways must close its connection (RFC 9112 §6.3)");
}

// Status lines the fuzzer found (tests/fuzz/corpus/response_head/regression_*) and a status outside 100-599:
// a protocol error, one attempt, whether the body is to be buffered or streamed. Which layer refuses a line
// depends on the libcurl linked: 7.88 hands "HTTP/.1 ..." to the header callback, whose check says "the server
// sent a malformed status line"; 8.14 refuses it itself ("Unsupported HTTP version in response",
// CURLE_UNSUPPORTED_PROTOCOL). The code and the count are the behaviour; the message is the same in every mode.
TEST_F(WireFaultTest, AMalformedStatusLineIsJudgedAlikeBufferedAndStreamed) {
  struct Case {
    const char* reply;
    const char* want;  // the error's code, or the answer's status and body
  } cases[] = {
      {"HTTP/.1  21303 00 OK\r\nCmntent-Length:\xd8\xcd\xf2\xf5"
       "content-length:  2\r\n\r\nab",
       "303"},
      {"HTTP/2  1.1303 00 OK\r\nCmntent-Length:\xd8\xcd\xf2\xf5"
       "content-length:  2\r\n\r\nab",
       "303"},
      {"HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n", "303"},
      {"HTTP/1.1 599 Odd\r\nContent-Length: 2\r\n\r\nab", "599 ab"},
  };
  for (const Case& k : cases) {
    std::string first_message;
    for (const BodyMode mode : humus::test::kEveryBodyMode) {
      RawPeer peer(always(k.reply));
      auto c = make(peer);
      CallResult out = call_with(*c, req(peer), mode);
      const std::string got = out.ok() ? what(out) : std::to_string(static_cast<int>(out.error.code()));
      EXPECT_EQ(got, k.want) << to_string(mode) << ": " << k.reply << " gave " << what(out);
      EXPECT_EQ(peer.requests(), 1) << to_string(mode) << ": " << k.reply;
      if (out.ok()) continue;
      EXPECT_FALSE(out.error.message().empty());
      if (first_message.empty()) first_message = out.error.message();
      EXPECT_EQ(out.error.message(), first_message) << to_string(mode) << " was judged otherwise: " << k.reply;
    }
  }
}

// F54
TEST_F(WireFaultTest, BareLfLineEndingsAreTolerated) {
  RawPeer peer(once("HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n\nok"));
  auto c = make(peer);
  CallResult out = c->execute(req(peer));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->body, "ok");
  ASSERT_NE(out.response->headers.find("X-A"), nullptr);
  EXPECT_EQ(*out.response->headers.find("X-A"), "b");
}

// F55: obs-fold continuation lines are tolerated (libcurl passes them on; the client keeps the answer).
TEST_F(WireFaultTest, ObsFoldContinuationLinesAreTolerated) {
  RawPeer peer(once("HTTP/1.1 200 OK\r\nX-A: one\r\n  two\r\nContent-Length: 2\r\n\r\nok"));
  auto c = make(peer);
  CallResult out = c->execute(req(peer));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->body, "ok");
  EXPECT_EQ(c->breaker().counts().failures, 0u);
}

// F56
TEST_F(WireFaultTest, EarlyHintsBeforeTheAnswerAreSkipped) {
  RawPeer peer(once("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Final: yes\r\n\r\nok"));
  auto c = make(peer);
  CallResult out = c->execute(req(peer));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->status, 200);
  EXPECT_EQ(out.response->body, "ok");
  EXPECT_EQ(out.response->headers.find("Link"), nullptr) << "the 1xx's headers leaked into the answer";
  EXPECT_NE(out.response->headers.find("X-Final"), nullptr);
}

// F56, S15: an endless run of 1xx answers counts against the header limit: too large, once, no verdict.
TEST_F(WireFaultTest, AFloodOfInterimAnswersIsTooLargeNotRetried) {
  std::string flood;
  for (int i = 0; i < 5000; ++i) flood += "HTTP/1.1 100 Continue\r\n\r\n";  // ~125 KB of 1xx
  RawPeer peer(once(flood + kOk));
  auto c = make(peer);
  CallResult out = c->execute(req(peer));
  ASSERT_FALSE(out.ok()) << what(out);
  EXPECT_EQ(out.error.code(), Code::kTooLarge) << out.error.message();
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(c->breaker().counts().failures, 0u);
}

// F57
TEST_F(WireFaultTest, ACloseDelimitedBodyIsReadToTheEnd) {
  RawPeer peer(once("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + std::string(200000, 'b')));
  auto c = make(peer);
  CallResult out = c->execute(req(peer));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->body.size(), 200000u);
}

// --- Peers that stall. ----------------------------------------------------------------------------------

// F62, S17: one header line every 100 ms, for a minute, never completes the header block within the
// attempt's timeout. The call may last 30 s: the attempt's 400 ms is what ends it, as its message says — bytes
// trickling in that kept the attempt alive would leave the call to its deadline.
TEST_F(WireFaultTest, SlowlorisHeadersAreCutByTheAttemptTimeout) {
  RawPeer peer([](RawConnection& c) {
    if (!c.read_request()) return;
    c.write("HTTP/1.1 200 OK\r\n");
    for (int i = 0; i < 600; ++i) {
      if (!c.read_some(100).empty()) return;  // the client left (EOF) or sent something
      c.write("X-Drip-" + std::to_string(i) + ": v\r\n");
    }
  });
  settings::Settings s;
  s.max_attempts = 1;
  s.timeout = std::chrono::seconds(30);
  s.attempt_timeout = milliseconds(400);
  s.connect_timeout = milliseconds(400);
  auto c = make(peer, s);
  CallResult out = c->execute(req(peer));
  ASSERT_FALSE(out.ok()) << what(out);
  EXPECT_EQ(out.error.code(), Code::kTimeout) << out.error.message();
  EXPECT_TRUE(by_attempt_timeout(out)) << "bytes trickling in kept the attempt alive: " << out.error.message();
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(peer.requests(), 1);
  EXPECT_EQ(c->breaker().counts().failures, 1u);
}

// F63, S17: the body stops after 3 of 1000 bytes; the call's timeout ends it, never a short body. The peer
// holds the connection for 10 s: the call's 1.5 s deadline, as its message says, is what ends the call — not
// the attempt's 500 ms, which covers only the headers, and not the peer's close.
TEST_F(WireFaultTest, ABodyThatNeverEndsIsCutByTheCallTimeout) {
  RawPeer peer(then_stall("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc"));
  settings::Settings s;
  s.max_attempts = 1;
  s.timeout = milliseconds(1500);
  s.attempt_timeout = milliseconds(500);
  s.connect_timeout = milliseconds(500);
  auto c = make(peer, s);
  const auto t0 = Clock::now();
  CallResult out = c->execute(req(peer));
  const auto took = Clock::now() - t0;
  ASSERT_FALSE(out.ok()) << what(out);
  EXPECT_EQ(out.error.code(), Code::kTimeout) << out.error.message();
  EXPECT_TRUE(by_call_deadline(out)) << out.error.message();
  EXPECT_GE(took, milliseconds(1450));  // not at the attempt's timeout: a lower bound, which load only lengthens
  EXPECT_EQ(peer.requests(), 1);
  EXPECT_EQ(c->breaker().counts().failures, 1u);
}

// F65: a body that stalls after 300 KB of 1 MB (the catalogue's mid-body stall, made by the peer itself).
TEST_F(WireFaultTest, ABodyThatStallsMidwayIsCutByTheCallTimeout) {
  RawPeer peer(then_stall("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + std::string(300000, 's')));
  settings::Settings s;
  s.max_attempts = 1;
  s.timeout = milliseconds(1500);
  s.attempt_timeout = milliseconds(500);
  s.connect_timeout = milliseconds(500);
  auto c = make(peer, s);
  CallResult out = c->execute(req(peer));
  ASSERT_FALSE(out.ok()) << what(out);
  EXPECT_EQ(out.error.code(), Code::kTimeout) << out.error.message();
  EXPECT_TRUE(by_call_deadline(out)) << out.error.message();  // not the peer's close 10 s on
  EXPECT_EQ(peer.requests(), 1);
}

// F31: a TLS peer that accepts and never answers the ClientHello is bounded by the connect timeout. The peer
// holds each connection for 30 s and the attempts may last 20 s: the 300 ms connect timeout is all that can
// end them, and the message is neither the attempt's timeout nor the call's deadline.
TEST_F(WireFaultTest, ATlsHandshakeThatNeverCompletesIsATimeout) {
  RawPeer peer([](RawConnection& c) { hold_until_the_client_leaves(c, 30'000); });
  settings::Settings s;
  s.max_attempts = 2;
  s.timeout = std::chrono::seconds(40);
  s.attempt_timeout = std::chrono::seconds(20);
  s.connect_timeout = milliseconds(300);
  auto c = make(peer, s, "https");
  CallResult out = c->execute(https_req(peer));
  ASSERT_FALSE(out.ok()) << what(out);
  EXPECT_EQ(out.error.code(), Code::kTimeout) << out.error.message();
  EXPECT_FALSE(by_attempt_timeout(out)) << out.error.message();
  EXPECT_FALSE(by_call_deadline(out)) << out.error.message();
  EXPECT_EQ(out.attempts, 2);
  EXPECT_EQ(peer.connections(), 2);
  EXPECT_EQ(c->breaker().counts().failures, 2u);
}

// F30: a TLS peer that reads the ClientHello and closes, or resets: a dropped connection, retried.
TEST_F(WireFaultTest, ATlsHandshakeCutByThePeerIsConnectionLostAndRetried) {
  for (bool reset : {false, true}) {
    RawPeer peer([reset](RawConnection& c) {
      c.read_some(2000);
      if (reset) c.reset();
    });
    auto c = make(peer, {}, "https");
    CallResult out = c->execute(https_req(peer));
    ASSERT_FALSE(out.ok()) << what(out);
    EXPECT_EQ(out.error.code(), Code::kConnectionLost)
        << (reset ? "reset: " : "close: ") << out.error.message();
    EXPECT_EQ(out.attempts, 3) << (reset ? "reset" : "close");
    EXPECT_EQ(peer.connections(), 3) << (reset ? "reset" : "close");
  }
}

// F11: a listener that never accepts, its backlog full: the SYN goes unanswered, the connect timeout ends it.
TEST_F(WireFaultTest, AListenerThatNeverAcceptsIsAConnectTimeout) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 0), 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::vector<int> fillers;  // fill the accept queue; later SYNs are dropped
  for (int i = 0; i < 4; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(milliseconds(50));
  // The SYN is retried for minutes and the attempt may last 20 s: the 300 ms connect timeout is all that can
  // end it, and the message is neither the attempt's timeout nor the call's deadline.
  settings::Settings s;
  s.base_url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  s.max_attempts = 1;
  s.timeout = std::chrono::seconds(30);
  s.attempt_timeout = std::chrono::seconds(20);
  s.connect_timeout = milliseconds(300);
  Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
  ASSERT_TRUE(c.ok());
  Request r;
  r.url = s.base_url + "/";
  const auto t0 = Clock::now();
  CallResult out = (*c)->execute(r);
  const auto took = Clock::now() - t0;
  for (int fd : fillers) close(fd);
  close(listener);
  ASSERT_FALSE(out.ok()) << what(out);
  EXPECT_EQ(out.error.code(), Code::kTimeout) << out.error.message();
  EXPECT_FALSE(by_attempt_timeout(out)) << out.error.message();
  EXPECT_FALSE(by_call_deadline(out)) << out.error.message();
  EXPECT_EQ(out.attempts, 1);
  EXPECT_GE(took, milliseconds(250));  // not before the connect timeout: a lower bound
  EXPECT_EQ((*c)->breaker().counts().failures, 1u);
}

// --- Pooled connections the peer ends. --------------------------------------------------------------------

// F70, F71: the peer closes (FIN) or resets an idle pooled connection; the next call opens a new one, once.
TEST_F(WireFaultTest, APooledConnectionThePeerEndedIsReplacedTransparently) {
  for (bool reset : {false, true}) {
    auto ended = std::make_shared<std::atomic<bool>>(false);
    RawPeer peer([reset, ended](RawConnection& c) {
      if (!c.read_request()) return;
      c.write(kOk);
      std::this_thread::sleep_for(milliseconds(20));  // answered and idle: now end it
      if (reset) {
        c.reset();
      } else {
        ::shutdown(c.fd(), SHUT_WR);
      }
      *ended = true;
    });
    auto c = make(peer);
    ASSERT_EQ(what(c->execute(req(peer))), "200 ok");
    // The next call starts once the peer has ended the idle connection, however late a loaded machine lets it.
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (!*ended && Clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
    ASSERT_TRUE(*ended);
    std::this_thread::sleep_for(milliseconds(50));
    CallResult out = c->execute(req(peer));
    EXPECT_EQ(what(out), "200 ok") << (reset ? "reset" : "close");
    if (out.ok()) {
      EXPECT_EQ(out.response->attempts, 1) << (reset ? "reset" : "close");
    }
    EXPECT_EQ(peer.requests(), 2) << (reset ? "reset" : "close");
    EXPECT_EQ(peer.connections(), 2) << (reset ? "reset" : "close");
  }
}

// --- Redirects that leave the origin are handed back, never followed (docs/origin.md §2). ----------------

// F82, S8: a redirect loop ends after ten followed redirects with the 3xx as it came.
TEST_F(WireFaultTest, ARedirectLoopEndsAfterTenRedirectsWithTheLastAnswer) {
  RawPeer peer(always("HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n"));
  auto c = make(peer);
  CallResult out = c->execute(req(peer, "GET", "/loop"));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->status, 302);
  EXPECT_EQ(peer.requests(), 11);
}

// Another port, another host, another scheme, a file: URL: not followed, nothing sent there.
// F84, F85, F86, S8, S9
TEST_F(WireFaultTest, RedirectsToAnotherPortHostOrSchemeAreHandedBack) {
  RawPeer other(always(kOk));
  RawPeer peer_probe(always(kOk));  // only for its port number
  const std::string port = std::to_string(peer_probe.port());
  const std::vector<std::string> locations = {
      "http://127.0.0.1:" + std::to_string(other.port()) + "/x", "http://localhost:" + port + "/x",
      "https://127.0.0.1:" + port + "/x", "file:///etc/passwd", "ftp://127.0.0.1:" + port + "/x",
      "gopher://127.0.0.1:" + port + "/x"};
  for (const std::string& location : locations) {
    RawPeer peer(always("HTTP/1.1 302 Found\r\nLocation: " + location + "\r\nContent-Length: 0\r\n\r\n"));
    auto c = make(peer);
    Request r = req(peer);
    r.headers.add("Authorization", "Bearer secret");
    CallResult out = c->execute(r);
    ASSERT_TRUE(out.ok()) << location << ": " << out.error.message();
    EXPECT_EQ(out.response->status, 302) << location;
    ASSERT_NE(out.response->headers.find("Location"), nullptr) << location;
    EXPECT_EQ(*out.response->headers.find("Location"), location);
    EXPECT_EQ(peer.requests(), 1) << location;
  }
  EXPECT_EQ(other.requests(), 0);
}

// --- Calls the caller ends. -------------------------------------------------------------------------------

// F102: a call cancelled before it starts sends nothing and counts nothing.
TEST_F(WireFaultTest, ACallCancelledBeforeItStartsSendsNothing) {
  RawPeer peer(always(kOk));
  auto c = make(peer);
  CancelToken cancel;
  cancel.cancel();
  CallResult out = c->execute(req(peer), &cancel);
  ASSERT_FALSE(out.ok()) << what(out);
  EXPECT_EQ(out.error.code(), Code::kCancelled);
  EXPECT_EQ(peer.connections(), 0);
  const breaker::Counts counts = c->breaker().counts();
  EXPECT_EQ(counts.failures + counts.successes, 0u);
}

// F103: cancelled while the body arrives: the call ends at once, no verdict, the connection is not pooled.
// The peer holds the body's rest for a minute and the call may last 60 s: the cancel, made once the first
// bytes are written, is all that can end it. The 30 s bound tells a cancel acted on from one left for the
// deadline; no loaded machine nears it.
TEST_F(WireFaultTest, ACallCancelledMidBodyEndsAtOnceAndItsConnectionIsDiscarded) {
  auto connections = std::make_shared<std::atomic<int>>(0);
  auto written = std::make_shared<std::atomic<bool>>(false);
  RawPeer peer([connections, written](RawConnection& c) {
    if (connections->fetch_add(1) == 0) {
      if (!c.read_request()) return;
      c.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + std::string(1000, 'a'));
      *written = true;
      hold_until_the_client_leaves(c, 60'000);
      return;
    }
    while (c.read_request()) c.write(kOk);
  });
  settings::Settings s;
  s.timeout = std::chrono::seconds(60);
  s.attempt_timeout = std::chrono::seconds(60);
  auto c = make(peer, s);
  CancelToken cancel;
  std::thread canceller([&] {
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (!*written && Clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
    cancel.cancel();
  });
  const auto t0 = Clock::now();
  CallResult out = c->execute(req(peer), &cancel);
  const auto took = Clock::now() - t0;
  canceller.join();
  ASSERT_FALSE(out.ok()) << what(out);
  EXPECT_EQ(out.error.code(), Code::kCancelled) << out.error.message();
  EXPECT_TRUE(written->load());
  EXPECT_EQ(out.attempts, 1);
  EXPECT_LT(took, std::chrono::seconds(30));
  EXPECT_EQ(c->breaker().counts().failures, 0u);
  EXPECT_EQ(what(c->execute(req(peer))), "200 ok");
  EXPECT_EQ(peer.connections(), 2);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
