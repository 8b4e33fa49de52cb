// The wire is untrusted (docs/transport.md §10.5–§10.8, docs/libcurl-traps.md §19): raw loopback peers that
// break HTTP on purpose, and what the caller, the breaker and the wire see. Every test counts the requests
// that reached the peer, so "what was sent" is the peer's word, not the client's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
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

constexpr const char* kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

class HostilePeerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Client> make(const RawPeer& peer, settings::Settings s = {}) {
    s.base_url = "http://127.0.0.1:" + std::to_string(peer.port());
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
    if (r.method == "POST" || r.method == "PUT") r.body = std::make_shared<const std::string>("{\"n\": 1}");
    return r;
  }

  static std::string body_of(const CallResult& r) { return r.ok() ? r.response->body : "<" + r.error.message() + ">"; }

  // A client whose every GET may be retried, for tests about what each attempt sends or each answer holds.
  std::unique_ptr<Client> make_retrying(const RawPeer& peer) {
    settings::Settings s;
    s.retry_budget.tokens = 10000;
    return make(peer, s);
  }

  struct Tally {
    int attempts = 0;  // every call's, answered or not
    int answered = 0;
  };

  // A GET of each target, blocking (Client::execute) and then on the loop (Client::submit), `rounds` times.
  // A call that failed met a connection the peer closed on every attempt (connection lost); `check` sees the
  // answer of every other.
  static Tally each_way(Client& c, const RawPeer& peer, const std::vector<std::string>& targets, int rounds,
                        const std::function<void(const std::string&, const Response&)>& check) {
    Tally tally;
    auto judge = [&](const std::string& target, const CallResult& out) {
      tally.attempts += out.attempts;
      if (!out.ok()) {
        EXPECT_EQ(out.error.code(), Code::kConnectionLost) << target << ": " << out.error.message();
        return;
      }
      ++tally.answered;
      check(target, *out.response);
    };
    for (int round = 0; round < rounds; ++round) {
      for (const std::string& target : targets) judge(target, c.execute(req(peer, "GET", target)));
      for (const std::string& target : targets) {
        std::promise<CallResult> p;
        c.submit(req(peer, "GET", target), [&p](CallResult r) { p.set_value(std::move(r)); });
        judge(target, p.get_future().get());
      }
    }
    return tally;
  }

  Runtime runtime_{RuntimeOptions{}};
};

// --- 1. A header block cut by the peer is a dropped connection, never a response. --------------------------

// F38
TEST_F(HostilePeerTest, HeaderBlockCutByEofIsConnectionLostAndRetriedForGet) {
  RawPeer peer([](RawConnection& c) {
    if (c.read_request()) c.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n");
  });
  auto c = make(peer);
  CallResult out = c->execute(req(peer));
  ASSERT_FALSE(out.ok()) << "a cut header block was returned as a " << out.response->status;
  EXPECT_EQ(out.error.code(), Code::kConnectionLost) << out.error.message();
  EXPECT_EQ(out.attempts, 3);
  EXPECT_EQ(peer.requests(), 3);
}

TEST_F(HostilePeerTest, HeaderBlockCutByEofIsNotRetriedForAnUnkeyedPost) {
  RawPeer peer([](RawConnection& c) {
    if (c.read_request()) c.write("HTTP/1.1 201 Created\r\n");
  });
  auto c = make(peer);
  CallResult out = c->execute(req(peer, "POST"));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error.code(), Code::kConnectionLost);
  EXPECT_EQ(peer.requests(), 1);
}

// --- 2. Late bytes poison no pooled connection (F58, F73). -------------------------------------------------

// On its first connection, answers the first request with `first`, then sends `late` after a pause and
// sets `sent`; every other request gets "ok". A client that reads the late bytes as the next response gets
// `EVIL`.
RawPeer::Handler late_bytes(std::string first, std::string late, int pause_ms,
                            std::shared_ptr<std::atomic<bool>> sent) {
  auto connections = std::make_shared<std::atomic<int>>(0);
  return [first, late, pause_ms, connections, sent](RawConnection& c) {
    if (connections->fetch_add(1) == 0) {
      if (!c.read_request()) return;
      c.write(first);
      if (pause_ms > 0) std::this_thread::sleep_for(milliseconds(pause_ms));
      c.write(late);
      *sent = true;
    }
    while (c.read_request()) c.write(kOk);
  };
}

// Waits (at most 20 s) until the peer says it wrote, then a moment for the bytes to cross loopback: the next
// call starts after the peer acted, however late a loaded machine lets it act.
void wait_until_sent(const std::atomic<bool>& sent) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!sent && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_TRUE(sent) << "the peer never wrote its late bytes";
  std::this_thread::sleep_for(milliseconds(50));
}

constexpr const char* kEvil = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL";

// F73, the first body buffered or streamed.
TEST_F(HostilePeerTest, F73BytesAfterAContentLengthBodyNeverBecomeTheNextResponse) {
  for (const BodyMode mode : humus::test::kEveryBodyMode) {
    for (int pause : {0, 50}) {
      SCOPED_TRACE(to_string(mode) + ", pause " + std::to_string(pause));
      auto sent = std::make_shared<std::atomic<bool>>(false);
      RawPeer peer(late_bytes(kOk, kEvil, pause, sent));
      auto c = make(peer);
      ASSERT_EQ(body_of(call_with(*c, req(peer), mode)), "ok");
      wait_until_sent(*sent);
      EXPECT_EQ(body_of(c->execute(req(peer))), "ok");
      EXPECT_EQ(peer.connections(), 2) << "the poisoned connection was reused";
      EXPECT_EQ(peer.requests(), 2);
    }
  }
}

// F58
TEST_F(HostilePeerTest, F58ABodyAfterA204OrAHeadAnswerNeverBecomesTheNextResponse) {
  struct Case {
    const char* method;
    const char* first;
  } cases[] = {{"GET", "HTTP/1.1 204 No Content\r\n\r\n"},
               {"HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"},
               {"GET", "HTTP/1.1 304 Not Modified\r\n\r\n"}};
  for (const BodyMode mode : humus::test::kEveryBodyMode) {
    for (const Case& k : cases) {
      SCOPED_TRACE(to_string(mode) + ": " + k.method + " " + k.first);
      auto sent = std::make_shared<std::atomic<bool>>(false);
      RawPeer peer(late_bytes(k.first, kEvil, 20, sent));
      auto c = make(peer);
      CallResult first = call_with(*c, req(peer, k.method), mode);
      ASSERT_TRUE(first.ok()) << first.error.message();
      EXPECT_EQ(first.response->body, "");
      wait_until_sent(*sent);
      EXPECT_EQ(body_of(c->execute(req(peer))), "ok");
      EXPECT_EQ(peer.connections(), 2);
    }
  }
}

TEST_F(HostilePeerTest, LateBytesAreCheckedForAsynchronousCallsToo) {
  auto sent = std::make_shared<std::atomic<bool>>(false);
  RawPeer peer(late_bytes(kOk, kEvil, 30, sent));
  auto c = make(peer);
  auto run = [&] {
    std::promise<CallResult> p;
    auto f = p.get_future();
    c->submit(req(peer), [&p](CallResult r) { p.set_value(std::move(r)); });
    return f.get();
  };
  ASSERT_EQ(body_of(run()), "ok");
  wait_until_sent(*sent);
  EXPECT_EQ(body_of(run()), "ok");
  EXPECT_EQ(peer.connections(), 2);
}

// Between its requests a pooled connection stays registered with the event loop's epoll (parked, so its next
// request costs no epoll_ctl). Each way a parked socket can end must leave the next call a socket it waits
// on: a registration kept for a closed socket would give the next socket of the same number no wake-up at
// all, and the call would end at its deadline instead of with its answer.
TEST_F(HostilePeerTest, AsynchronousCallsOutliveIdleConnectionsThePeerClosesOrLibcurlDoes) {
  // Each answer comes late, so that the call waits on its socket: libcurl's own timers would drive a quick
  // one.
  auto fins = std::make_shared<std::atomic<int>>(0);
  RawPeer closes_idle([fins](RawConnection& c) {
    if (!c.read_request()) return;
    std::this_thread::sleep_for(milliseconds(20));
    c.write(kOk);  // then a FIN while the connection waits in the pool
    ::shutdown(c.fd(), SHUT_WR);
    ++*fins;
  });
  RawPeer says_close([](RawConnection& c) {
    if (!c.read_request()) return;
    std::this_thread::sleep_for(milliseconds(20));
    c.write("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
  });
  // A call that got no wake-up would end at its 20 s deadline: a timeout where the answer came long before.
  for (RawPeer* peer : {&closes_idle, &says_close}) {
    auto c = make(*peer);
    for (int i = 0; i < 20; ++i) {
      Request r = req(*peer);
      r.timeout = std::chrono::seconds(20);
      std::promise<CallResult> p;
      auto f = p.get_future();
      c->submit(r, [&p](CallResult out) { p.set_value(std::move(out)); });
      ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
      CallResult out = f.get();
      ASSERT_EQ(body_of(out), "ok") << "call " << i;
      EXPECT_EQ(out.attempts, 1);
      if (peer == &closes_idle) {  // the FIN arrives while idle: the next call waits until the peer sent it
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (fins->load() < i + 1 && std::chrono::steady_clock::now() < until) {
          std::this_thread::sleep_for(milliseconds(1));
        }
        ASSERT_EQ(fins->load(), i + 1);
        std::this_thread::sleep_for(milliseconds(10));
      }
    }
    EXPECT_EQ(peer->requests(), 20);
    EXPECT_EQ(peer->connections(), 20);
  }
}

// --- 3. Callers cannot write the framing (docs/transport.md §10.5). -----------------------------------------

// F109, S11
TEST_F(HostilePeerTest, ClientOwnedAndMalformedHeadersAreRefusedBeforeAnyIo) {
  RawPeer peer([](RawConnection& c) {
    while (c.read_request()) c.write(kOk);
  });
  auto c = make(peer);
  const std::pair<std::string, std::string> refused[] = {
      {"Content-Length", "2"}, {"Host", "evil.example"}, {"Transfer-Encoding", "chunked"},
      {"Connection", "close"}, {"keep-alive", "5"},     {"Upgrade", "h2c"},
      {"TE", "trailers"},      {"Trailer", "X"},        {"Proxy-Connection", "keep-alive"},
      {":path", "/x"},         {"X-A", "a\x01"},        {"X-B", "b\x7f"},
      {"X-C", "c\r\nX-D: d"},  {"Bad Name", "v"},       {"", "v"}};
  for (const auto& [name, value] : refused) {
    Request r = req(peer, "POST");
    r.headers.add(name, value);
    CallResult out = c->execute(r);
    ASSERT_FALSE(out.ok()) << name;
    EXPECT_EQ(out.error.code(), Code::kInvalidArgument) << name;
    if (!name.empty() && name != "Bad Name") {
      EXPECT_NE(out.error.message().find(name), std::string::npos) << out.error.message();
    }
  }
  EXPECT_EQ(peer.connections(), 0);
  Request tab = req(peer);
  tab.headers.add("X-Tab", "a\tb");  // HTAB is the one control character a value may hold
  EXPECT_TRUE(c->execute(tab).ok());
}

TEST_F(HostilePeerTest, ConfiguredHeadersFollowTheSameRule) {
  RawPeer peer([](RawConnection&) {});
  settings::Settings s;
  s.headers.add("Host", "evil.example");
  s.base_url = "http://127.0.0.1:" + std::to_string(peer.port());
  Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("Host"), std::string::npos) << c.status().message();
}

// --- 4. A peer that breaks HTTP is a protocol failure of the dependency, not the caller's mistake. ----------

// F52, F53, S16
TEST_F(HostilePeerTest, BrokenStatusLinesAreProtocolErrorsCountedAgainstTheDependency) {
  for (const char* reply : {"hello from HTTP/0.9\r\n", "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
                            "HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n",
                            "HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n",
                            "HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 0\r\n\r\n"}) {
    RawPeer peer([reply = std::string(reply)](RawConnection& c) {
      if (c.read_request()) c.write(reply);
    });
    auto c = make(peer);
    CallResult out = c->execute(req(peer));
    ASSERT_FALSE(out.ok()) << reply;
    EXPECT_EQ(out.error.code(), Code::kProtocol) << reply << ": " << out.error.message();
    EXPECT_EQ(out.attempts, 1) << reply;  // the same answer would come again
    EXPECT_EQ(peer.requests(), 1) << reply;
    EXPECT_EQ(c->breaker().counts().failures, 1u) << reply;
  }
}

// --- 5. Oversized header blocks end once, as too large, and blame nobody (F49, F50). ------------------------

// F49, F50, S15
TEST_F(HostilePeerTest, F49F50OversizedHeaderBlocksAreTooLargeNotRetriedNoBreakerVerdict) {
  std::string many = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 40000; ++i) many += "X-" + std::to_string(i) + ": v\r\n";  // ~650 KB
  std::string one_big = "HTTP/1.1 200 OK\r\nX-Big: " + std::string(300 * 1024, 'a') + "\r\n";
  std::string fields = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 201; ++i) fields += "X-" + std::to_string(i) + ": v\r\n";  // small, but 201 fields
  std::string over_limit = "HTTP/1.1 200 OK\r\nX-Big: " + std::string(70 * 1024, 'a') + "\r\n";
  for (const std::string* head : {&many, &one_big, &fields, &over_limit}) {
    RawPeer peer([reply = *head + "Content-Length: 0\r\n\r\n"](RawConnection& c) {
      if (c.read_request()) c.write(reply);
    });
    auto c = make(peer);
    CallResult out = c->execute(req(peer));
    ASSERT_FALSE(out.ok()) << head->size();
    EXPECT_EQ(out.error.code(), Code::kTooLarge) << head->size() << ": " << out.error.message();
    EXPECT_EQ(out.attempts, 1);
    EXPECT_EQ(peer.requests(), 1);
    const breaker::Counts counts = c->breaker().counts();
    EXPECT_EQ(counts.failures + counts.successes, 0u) << "our own limit is no verdict on the dependency";
    EXPECT_DOUBLE_EQ(c->budget().tokens(), 10.0);
  }
  // Under the limit is fine: 150 small fields.
  std::string ok_head = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 150; ++i) ok_head += "X-" + std::to_string(i) + ": v\r\n";
  RawPeer peer([reply = ok_head + "Content-Length: 2\r\n\r\nok"](RawConnection& c) {
    if (c.read_request()) c.write(reply);
  });
  EXPECT_EQ(body_of(make(peer)->execute(req(peer))), "ok");
}

TEST_F(HostilePeerTest, MaxResponseHeadersIsTheSettingsLimit) {
  const std::string head = "HTTP/1.1 200 OK\r\nX-Big: " + std::string(6000, 'a') + "\r\nContent-Length: 2\r\n\r\nok";
  RawPeer peer([head](RawConnection& c) {
    while (c.read_request()) c.write(head);
  });
  EXPECT_EQ(body_of(make(peer)->execute(req(peer))), "ok");  // 6 KB is within the default 64 KiB
  Result<settings::Settings> s = settings::from_json(R"({"base_url": "http://x", "max_response_headers": 4096})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  CallResult out = make(peer, *s)->execute(req(peer));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error.code(), Code::kTooLarge);
  EXPECT_NE(out.error.message().find("4096"), std::string::npos) << out.error.message();
}

// F60, S15: a chain of encodings (CVE-2023-23916) is refused, once, as the peer's broken answer.
TEST_F(HostilePeerTest, F60AStackOfContentEncodingsIsRefusedNotRetried) {
  std::string head = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 8; ++i) head += "Content-Encoding: gzip\r\n";
  RawPeer peer([reply = head + "Content-Length: 4\r\n\r\nabcd"](RawConnection& c) {
    while (c.read_request()) c.write(reply);
  });
  auto c = make(peer);
  CallResult out = c->execute(req(peer));
  ASSERT_FALSE(out.ok()) << out.response->status << " " << out.response->body.size();
  EXPECT_EQ(out.error.code(), Code::kProtocol) << out.error.message();
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(peer.requests(), 1);
}

// --- 6. Every request on the wire is an attempt the policy admitted (docs/transport.md §10.8). --------------

// Answers every request, and closes (FIN, unanswered) every `kill_every`-th request that arrives on a
// reused connection: the stale keep-alive race, on purpose.
RawPeer::Handler killing(int kill_every, std::atomic<int>& reused_seen) {
  return [kill_every, &reused_seen](RawConnection& c) {
    for (int on_this_connection = 0; c.read_request(); ++on_this_connection) {
      if (on_this_connection > 0 && ++reused_seen % kill_every == 0) return;
      c.write(kOk);
    }
  };
}

// F72, S20
TEST_F(HostilePeerTest, AttemptsReportedEqualWireRequestsWhilePooledConnectionsDie) {
  std::atomic<int> reused{0};
  RawPeer peer(killing(3, reused));
  settings::Settings s;
  s.retry_budget.tokens = 10000;  // every safe request may be retried: the test is about counting
  auto c = make(peer, s);
  std::atomic<int> attempts{0}, unkeyed_posts_failed{0}, calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        Request r = req(peer, i % 3 == 0 ? "GET" : "POST");
        if (i % 3 == 1) r.headers.add("Idempotency-Key", "k-" + std::to_string(t) + "-" + std::to_string(i));
        CallResult out = c->execute(r);
        attempts += out.attempts;
        ++calls;
        if (!out.ok()) {
          EXPECT_EQ(out.error.code(), Code::kConnectionLost) << out.error.message();
          // An unkeyed POST is never sent twice; a request safe to resend fails only once every attempt
          // met a dying connection.
          EXPECT_EQ(out.attempts, i % 3 == 2 ? 1 : 3) << out.error.message();
          if (i % 3 == 2) ++unkeyed_posts_failed;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(calls.load(), 160);
  EXPECT_GT(unkeyed_posts_failed.load(), 0) << "no unkeyed POST met a dying connection";
  EXPECT_GT(reused.load(), 10) << "the load reused too few connections to test anything";
  EXPECT_EQ(attempts.load(), peer.requests()) << "a request reached the wire that no attempt accounts for";
}

// Answers each request with its own request-target as the body, and closes (FIN, unanswered) every third
// request that arrives on a reused connection.
RawPeer::Handler echoing_target(std::atomic<int>& reused_seen) {
  return [&reused_seen](RawConnection& c) {
    std::string head;
    for (int on_this_connection = 0; c.read_request(&head); ++on_this_connection) {
      if (on_this_connection > 0 && ++reused_seen % 3 == 0) return;
      const size_t from = head.find(' ') + 1;
      const std::string target = head.substr(from, head.find(' ', from) - from);
      c.write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(target.size()) + "\r\n\r\n" + target);
    }
  };
}

// The transport hands libcurl each URL parsed once, as a URL handle a reused easy handle keeps between
// transfers (curl_easy.cc, set_url). Each call, blocking (one lane, one handle) or on the loop, must still send
// its own target, on a reused connection, on a new one, and on the retry after a pooled connection died.
TEST_F(HostilePeerTest, EachCallSendsItsOwnTargetAsTheUrlChangesAndPooledConnectionsDie) {
  std::atomic<int> reused{0};
  RawPeer peer(echoing_target(reused));
  auto c = make_retrying(peer);
  const std::vector<std::string> targets = {"/a", "/a", "/b/c?x=1&y=2", "/%7Euser/p%20q", "/a?", "/", "/b/c?x=1"};
  const Tally tally = each_way(*c, peer, targets, 4,
                               [](const std::string& target, const Response& r) { EXPECT_EQ(r.body, target); });
  EXPECT_GT(tally.answered, 40) << "too few calls were answered to check their targets";
  EXPECT_GT(reused.load(), 20) << "too few calls reused a connection to test the handle's reuse";
  EXPECT_GT(peer.connections(), 5) << "no pooled connection died";
  EXPECT_EQ(tally.attempts, peer.requests()) << "a request reached the wire that no attempt accounts for";
}

// Answers each request with a 103 carrying fields of its own, then a 200 whose body is the request-target.
// Every third request on a reused connection gets the 103 only, and then a reset: the attempt's head is cut
// after an interim answer.
RawPeer::Handler hinting_then_answering(std::atomic<int>& cut) {
  return [&cut](RawConnection& c) {
    std::string head;
    for (int on_this_connection = 0; c.read_request(&head); ++on_this_connection) {
      const size_t from = head.find(' ') + 1;
      const std::string target = head.substr(from, head.find(' ', from) - from);
      c.write("HTTP/1.1 103 Early Hints\r\nLink: </hint" + target + ">\r\nX-Hint: " + target + "\r\n\r\n");
      if (on_this_connection > 0 && ++cut % 3 == 0) {
        c.reset();
        return;
      }
      c.write("HTTP/1.1 200 OK\r\nX-Final: " + target + "\r\nContent-Length: " + std::to_string(target.size()) +
              "\r\n\r\n" + target);
    }
  };
}

// F56. An attempt's header list is cleared at every status line and keeps its room (curl_easy.cc, on_header), and
// the attempt state is reused by the next transfer of its easy handle. Whatever came before — an interim
// answer's fields, an earlier call's answer, an attempt cut right after a 103 — no answer carries a field
// that its own final head did not send.
TEST_F(HostilePeerTest, InterimFieldsNeverReachAnAnswerAcrossReusedAttemptsAndHeadsCutAfterA103) {
  std::atomic<int> cut{0};
  RawPeer peer(hinting_then_answering(cut));
  auto c = make_retrying(peer);
  const Tally tally = each_way(*c, peer, {"/a", "/bb", "/c?d=1"}, 6, [](const std::string& target, const Response& r) {
    EXPECT_EQ(r.status, 200) << target;
    EXPECT_EQ(r.body, target);
    EXPECT_EQ(r.headers.find("Link"), nullptr) << target << ": a 103's field reached the answer";
    EXPECT_EQ(r.headers.find("X-Hint"), nullptr) << target << ": a 103's field reached the answer";
    const std::string* final_field = r.headers.find("X-Final");
    ASSERT_NE(final_field, nullptr) << target;
    EXPECT_EQ(*final_field, target) << "another answer's field";
  });
  EXPECT_GT(tally.answered, 25) << "too few calls were answered to check their fields";
  EXPECT_GT(cut.load(), 6) << "too few heads were cut after a 103";
  EXPECT_GT(peer.connections(), 3) << "no connection was reset";
  EXPECT_EQ(tally.attempts, peer.requests()) << "a request reached the wire that no attempt accounts for";
}

// --- 7. A local shortage is not the dependency's failure (F13). ---------------------------------------------

// F13
TEST_F(HostilePeerTest, F13OutOfFileDescriptorsIsResourceNotRetriedNoVerdictAndRecovers) {
  if (humus::test::kSanitized) {
    GTEST_SKIP() << "the sanitizer runtimes need descriptors of their own to report: the plain build runs this";
  }
  RawPeer peer([](RawConnection& c) {
    while (c.read_request()) c.write(kOk);
  });
  auto c = make(peer);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> hogs;
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) hogs.push_back(fd);
  CallResult starved = c->execute(req(peer));
  for (int fd : hogs) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);

  ASSERT_FALSE(starved.ok());
  EXPECT_EQ(starved.error.code(), Code::kResource) << starved.error.message();
  EXPECT_EQ(starved.attempts, 1);
  const breaker::Counts counts = c->breaker().counts();
  EXPECT_EQ(counts.failures, 0u);
  EXPECT_EQ(counts.state, breaker::State::kClosed);
  EXPECT_DOUBLE_EQ(c->budget().tokens(), 10.0);
  EXPECT_EQ(peer.requests(), 0);
  // Descriptors free again: the same client works at once.
  EXPECT_EQ(body_of(c->execute(req(peer))), "ok");
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
