// The fault catalogue's HTTP/2 and TLS-listener cases (tests/fault-coverage.md) against the scriptable test
// server (tests/server/): streams reset or refused, GOAWAY, a stream that never answers, a connection cut
// with streams in flight, a name the certificate does not carry, a redirect from https down to http.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "client/client.h"
#include "support/test_server.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using nlohmann::json;
using std::chrono::milliseconds;

class ServerFaultTest : public humus::test::WithTestServer {
 protected:
  ServerFaultTest() : runtime_(options()) {}

  static RuntimeOptions options() {
    RuntimeOptions o;
    o.resolve.emplace_back(server().host_port("https"), server().address("https"));
    const std::string port = std::to_string(server().port("https"));
    o.resolve.emplace_back("wrong.host.test:" + port, server().address("https"));
    return o;
  }

  std::unique_ptr<Client> make(settings::Settings s = {}, std::string base_url = "") {
    s.base_url = base_url.empty() ? "https://" + server().host_port("https") : base_url;
    s.backoff_base = milliseconds(1);
    s.backoff_max = milliseconds(2);
    s.tls.emplace();
    s.tls->ca_file = server().ca_file();
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Request req(const std::string& path, std::string method = "GET") {
    Request r;
    r.method = std::move(method);
    r.url = server().url("https", path);
    if (r.method == "POST") r.body = std::make_shared<const std::string>("x");
    return r;
  }

  static size_t received(const std::string& path) { return server().requests(path).size(); }

  Runtime runtime_;
};

// F90
TEST_F(ServerFaultTest, AStreamRefusedEveryTimeEndsAsStreamRefused) {
  server().script("/refused", json::array({{{"refuse_stream", true}}}));
  auto c = make();
  CallResult out = c->execute(req("/refused"));
  ASSERT_FALSE(out.ok()) << out.response->status;
  EXPECT_EQ(out.error.code(), Code::kStreamRefused) << out.error.message();
  EXPECT_EQ(static_cast<size_t>(out.attempts), received("/refused"))
      << "a refused stream no attempt accounts for";
  EXPECT_GE(c->breaker().counts().failures, 1u);
}

// A graceful GOAWAY (NO_ERROR, after the answer, then close) retires the connection: the next call goes to a
// new connection at once, in one attempt, a POST too, and nothing counts against the healthy server. The
// client sees the GOAWAY waiting unread on the idle connection before sending (docs/transport.md §10.7).
// F92
TEST_F(ServerFaultTest, AGracefulGoawayAfterTheAnswerMovesTheNextCallToANewConnection) {
  server().script("/bye", json::array({{{"status", 200}, {"body", "bye"}, {"close", true}}}));
  auto c = make();
  CallResult first = c->execute(req("/bye"));
  ASSERT_TRUE(first.ok()) << first.error.message();
  EXPECT_EQ(first.response->body, "bye");
  EXPECT_EQ(first.response->http_version, "2");
  // The server writes its GOAWAY in the same breath as the answer's last frame; the pause only keeps a
  // descheduled server on a loaded machine from making this a race.
  std::this_thread::sleep_for(milliseconds(100));
  CallResult second = c->execute(req("/after", "POST"));
  ASSERT_TRUE(second.ok()) << second.error.message();
  EXPECT_EQ(second.response->attempts, 1) << "the next call was first sent on the connection that went away";
  EXPECT_EQ(c->breaker().counts().failures, 0u) << "a graceful GOAWAY counted against a healthy server";
  const auto bye = server().requests("/bye");
  const auto after = server().requests("/after");
  ASSERT_EQ(bye.size(), 1u);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(bye[0]["connection"], after[0]["connection"]);
}

// RST_STREAM HTTP_1_1_REQUIRED: the stream was not processed, so the request goes again, a POST too, over
// HTTP/1.1 (new, counted attempts: libcurl's own silent downgrade is not let through, docs/transport.md
// §10.8), and the client remembers it: the next call goes over HTTP/1.1 at once. libcurl 7.88 names the
// reason only once the stream is reset on a reused connection, so up to two attempts go over HTTP/2 first.
// F98
TEST_F(ServerFaultTest, AStreamResetWithHttp11RequiredIsSentAgainOverHttp11) {
  server().script("/old", json::array({{{"http1_required", true}, {"status", 200}, {"body", "over 1.1"}}}));
  auto c = make();
  CallResult out = c->execute(req("/old", "POST"));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->body, "over 1.1");
  EXPECT_EQ(out.response->http_version, "1.1");
  EXPECT_GE(out.response->attempts, 2);
  EXPECT_LE(out.response->attempts, 3);
  CallResult next = c->execute(req("/old"));
  ASSERT_TRUE(next.ok()) << next.error.message();
  EXPECT_EQ(next.response->http_version, "1.1");
  EXPECT_EQ(next.response->attempts, 1) << "the origin's answer was forgotten";
  const auto records = server().requests("/old");
  ASSERT_EQ(records.size(), static_cast<size_t>(out.response->attempts) + 1) << "every request on the wire is an attempt";
  for (size_t i = 0; i + 2 < records.size(); ++i) EXPECT_EQ(records[i]["protocol"], "2");
  EXPECT_EQ(records[records.size() - 2]["protocol"], "1.1");
  EXPECT_EQ(records.back()["protocol"], "1.1");
}

// A stream refused on a reused HTTP/2 connection is as safe to send again as on a fresh one, for a POST too
// (docs/retries.md §5.3: HUMUS_E_STREAM_REFUSED is retried).
// F89
TEST_F(ServerFaultTest, AStreamRefusedOnAReusedConnectionIsResentForAPost) {
  server().script("/refused", json::array({{{"refuse_stream", true}}, {{"status", 201}}}));
  auto c = make();
  ASSERT_TRUE(c->execute(req("/warm")).ok());  // the connection the POST will reuse
  CallResult out = c->execute(req("/refused", "POST"));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->status, 201);
  const auto warm = server().requests("/warm");
  const auto refused = server().requests("/refused");
  ASSERT_EQ(warm.size(), 1u);
  ASSERT_FALSE(refused.empty());
  EXPECT_EQ(warm[0]["connection"], refused[0]["connection"]) << "the POST did not reuse the connection";
}

// F93: RST_STREAM mid-body: the half body is never the answer; a GET is retried.
TEST_F(ServerFaultTest, AStreamResetMidBodyIsRetriedForGet) {
  server().script("/cut", json::array({{{"status", 200}, {"body_size", 100000}, {"reset", "mid_body"}},
                                       {{"status", 200}, {"body", "whole"}}}));
  auto c = make();
  CallResult out = c->execute(req("/cut"));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->body, "whole");
  EXPECT_EQ(out.response->attempts, 2);
  EXPECT_EQ(received("/cut"), 2u);
  EXPECT_EQ(c->breaker().counts().failures, 1u);
}

// F93: ... and an unkeyed POST whose stream was reset mid-body is not sent again.
TEST_F(ServerFaultTest, AStreamResetMidBodyIsNotRetriedForAnUnkeyedPost) {
  server().script("/cut", json::array({{{"status", 200}, {"body_size", 100000}, {"reset", "mid_body"}},
                                       {{"status", 200}, {"body", "whole"}}}));
  auto c = make();
  CallResult out = c->execute(req("/cut", "POST"));
  ASSERT_FALSE(out.ok()) << out.response->body.size();
  EXPECT_EQ(out.error.code(), Code::kConnectionLost) << out.error.message();
  EXPECT_EQ(received("/cut"), 1u);
}

// F94: RST_STREAM before the headers: a GET is retried.
TEST_F(ServerFaultTest, AStreamResetBeforeTheHeadersIsRetriedForGet) {
  server().script("/early", json::array({{{"reset", "before_headers"}}, {{"status", 200}, {"body", "ok"}}}));
  auto c = make();
  CallResult out = c->execute(req("/early"));
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->body, "ok");
  EXPECT_EQ(out.response->attempts, 2);
  EXPECT_EQ(received("/early"), 2u);
}

// F95, S17: a stream the server never answers is cut by the attempt timeout and retried within the deadline.
// The call may last 30 s: only the attempt's 500 ms can end each of the three streams, and the call ends when
// they are spent, with the attempt's timeout.
TEST_F(ServerFaultTest, AStreamNeverAnsweredIsCutByTheAttemptTimeout) {
  server().script("/silent", json::array({{{"hang", true}}}));
  settings::Settings s;
  s.timeout = std::chrono::seconds(30);
  s.attempt_timeout = milliseconds(500);
  s.connect_timeout = milliseconds(500);
  s.max_attempts = 3;
  auto c = make(s);
  CallResult out = c->execute(req("/silent"));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error.code(), Code::kTimeout) << out.error.message();
  EXPECT_NE(out.error.message().find("attempt timed out before the response headers"), std::string::npos)
      << out.error.message();
  EXPECT_EQ(out.attempts, 3);
  EXPECT_EQ(static_cast<size_t>(out.attempts), received("/silent"));
}

// F101: the connection dies (GOAWAY, close) with streams in flight: every call ends exactly once, and the
// cut GETs are retried to success.
TEST_F(ServerFaultTest, EveryCallEndsOnceWhenTheConnectionDiesWithStreamsInFlight) {
  server().script("/slow", json::array({{{"status", 200}, {"body", "slow"}, {"delay_ms", 400}}}));
  const json closer = {{"status", 200}, {"body", "closer"}, {"delay_ms", 100}, {"close", true}};
  server().script("/closer", json::array({closer}), false);
  settings::Settings s;
  s.policy_params.consecutive_failures = 100;  // the cut streams must not open the breaker on their retries
  s.policy_params.min_results = 100;
  s.retry_budget.tokens = 1000;
  auto c = make(s);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<CallResult> done;
  auto sink = [&](CallResult r) {
    std::lock_guard<std::mutex> lock(mu);
    done.push_back(std::move(r));
    cv.notify_all();
  };
  for (int i = 0; i < 8; ++i) c->submit(req("/slow"), sink);
  c->submit(req("/closer"), sink);
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done.size() >= 9; }));
  lock.unlock();
  std::this_thread::sleep_for(milliseconds(200));  // no second completion of any call arrives late
  lock.lock();
  ASSERT_EQ(done.size(), 9u);
  int ok = 0;
  int attempts = 0;
  for (const CallResult& r : done) {
    if (r.ok()) {
      ++ok;
    } else {
      ADD_FAILURE() << r.error.message();
    }
    attempts += r.ok() ? r.response->attempts : r.attempts;
  }
  EXPECT_EQ(ok, 9);
  EXPECT_EQ(static_cast<size_t>(attempts), received("/slow") + received("/closer"));
  std::set<int> connections;
  for (const json& rec : server().requests("/slow")) connections.insert(rec["connection"].get<int>());
  EXPECT_GE(connections.size(), 2u) << "no stream was cut: the test tested nothing";
}

// F14, S1, S2: the server's certificate does not carry the name the client dialled.
TEST_F(ServerFaultTest, ANameTheCertificateDoesNotCarryIsRefused) {
  auto c = make({}, "https://wrong.host.test:" + std::to_string(server().port("https")));
  Request r;
  r.url = "https://wrong.host.test:" + std::to_string(server().port("https")) + "/name";
  CallResult out = c->execute(r);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error.code(), Code::kTls) << out.error.message();
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(received("/name"), 0u);
}

// F85, S9: a redirect from https to http on the same host and port is another origin: handed back.
TEST_F(ServerFaultTest, ARedirectFromHttpsToHttpIsHandedBack) {
  const std::string down = "http://" + server().host_port("https") + "/plain";
  server().script("/down", json::array({{{"status", 302}, {"headers", {{"Location", down}}}}}));
  auto c = make();
  Request r = req("/down");
  r.headers.add("Authorization", "Bearer secret");
  CallResult out = c->execute(r);
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->status, 302);
  EXPECT_EQ(received("/plain"), 0u);
}

// F34, S19: two clients of one origin differing only in their client certificate never share a connection.
// S5
TEST_F(ServerFaultTest, ClientsDifferingInTheirClientCertificateNeverShareAConnection) {
  RuntimeOptions o;
  o.resolve.emplace_back(server().host_port("mtls"), server().address("mtls"));
  Runtime runtime(o);
  settings::Settings with;
  with.base_url = "https://" + server().host_port("mtls");
  with.tls.emplace();
  with.tls->ca_file = server().ca_file();
  with.tls->cert_file = server().client_cert();
  with.tls->key_file = server().client_key();
  settings::Settings without = with;
  without.tls->cert_file.clear();
  without.tls->key_file.clear();
  auto a = Client::create(runtime, with);
  auto b = Client::create(runtime, without);
  ASSERT_TRUE(a.ok() && b.ok());
  Request r;
  r.url = server().url("mtls", "/who");
  for (int i = 0; i < 2; ++i) {
    CallResult ok = (*a)->execute(r);
    ASSERT_TRUE(ok.ok()) << ok.error.message();
    CallResult refused = (*b)->execute(r);
    ASSERT_FALSE(refused.ok()) << "a client without a certificate rode on another client's connection";
    EXPECT_EQ(refused.error.code(), Code::kTlsClientCert) << refused.error.message();
  }
  for (const json& rec : server().requests("/who")) EXPECT_FALSE(rec["client_cert"].is_null());
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
