// S6, F33: a connection older than max_connection_lifetime takes no new request (docs/transport.md §10.1),
// so a rotated certificate or a moved backend is met again within the lifetime.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "client/client.h"
#include "support/raw_peer.h"
#include "support/test_server.h"
#include "transport/curl_transport.h"
#include "transport/h2_observer.h"

namespace humus::transport {
namespace {
namespace HUMUS_UNITY_ID {

using humus::test::RawConnection;
using humus::test::RawPeer;
using std::chrono::milliseconds;

int connections_for_two_requests(std::chrono::milliseconds lifetime, std::chrono::milliseconds pause) {
  RawPeer peer([](RawConnection& c) {
    while (c.read_request()) c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  TransportConfig config;
  config.host = "127.0.0.1";
  config.max_connection_lifetime = lifetime;
  std::unique_ptr<Transport> transport = std::move(make_curl_transport(config)).value();
  WireRequest r;
  r.method = "GET";
  r.url = peer.url("/");
  for (int i = 0; i < 2; ++i) {
    if (i == 1) std::this_thread::sleep_for(pause);
    const Instant now = std::chrono::steady_clock::now();
    WireResult out = transport->perform(r, {now + std::chrono::seconds(5), now + std::chrono::seconds(5)}, nullptr);
    EXPECT_EQ(out.error, Code::kOk) << out.message;
    EXPECT_EQ(out.response.body, "ok");
  }
  return peer.connections();
}

// F33, S6
TEST(ConnectionLifetime, S6AConnectionOlderThanTheLifetimeIsNotReused) {
  EXPECT_EQ(connections_for_two_requests(std::chrono::seconds(2), milliseconds(2100)), 2);
}

TEST(ConnectionLifetime, AYoungerConnectionIsReused) {
  EXPECT_EQ(connections_for_two_requests(std::chrono::seconds(10), milliseconds(50)), 1);
}

// Busy HTTP/2 connections age too (docs/transport.md §10.1): the scriptable test server over TLS with ALPN h2,
// recording the connection of every request.
class BusyConnectionLifetime : public humus::test::WithTestServer {
 protected:
  using json = nlohmann::json;

  BusyConnectionLifetime() : runtime_(options()) {}

  static client::RuntimeOptions options() {
    client::RuntimeOptions o;
    o.resolve.emplace_back(server().host_port("https"), server().address("https"));
    return o;
  }

  // A client whose connections live 1 s (the settings' minimum).
  std::unique_ptr<client::Client> make() {
    settings::Settings s;
    s.base_url = "https://" + server().host_port("https");
    s.max_connection_lifetime = std::chrono::seconds(1);
    s.timeout = std::chrono::seconds(30);
    s.attempt_timeout = std::chrono::seconds(30);
    s.max_attempts = 1;  // every request the server sees is a call's one attempt
    s.tls.emplace();
    s.tls->ca_file = server().ca_file();
    Result<std::unique_ptr<client::Client>> c = client::Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static client::Request get(const std::string& path) {
    client::Request r;
    r.url = server().url("https", path);
    return r;
  }

  // The connection the server read PATH's INDEX-th request on; waits (at most 10 s) for it to arrive.
  static int connection_of(const std::string& path, size_t index = 0) {
    for (int i = 0; i < 1000; ++i) {
      const std::vector<json> seen = server().requests(path);
      if (seen.size() > index) return seen[index]["connection"].get<int>();
      std::this_thread::sleep_for(milliseconds(10));
    }
    ADD_FAILURE() << "no request " << index << " for " << path;
    return -1;
  }

  static std::set<int> connections_of(const std::string& path) {
    std::set<int> ids;
    for (const json& r : server().requests(path)) ids.insert(r["connection"].get<int>());
    return ids;
  }

  client::Runtime runtime_;
};

// Asynchronous calls share one HTTP/2 connection. A long call keeps it busy past the lifetime: a call made
// before takes a stream on it, calls made after go to one new connection (not one each: the old connection
// stays busy all along, so a transport that only refused it would open a connection per call), and the long
// call still completes on the old one.
// F132
TEST_F(BusyConnectionLifetime, ABusyHttp2ConnectionPastItsLifetimeTakesNoNewStreamAndItsStreamsFinish) {
  // Long enough that the four late calls, made one after another, all find it still running, however loaded
  // the machine (checked below, not assumed).
  server().script("/long", json::array({{{"status", 200}, {"body", "long"}, {"delay_ms", 10000}}}));
  auto c = make();
  ASSERT_NE(c, nullptr);
  const uint64_t aged_before = transport::h2::sessions_aged();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<std::string, client::CallResult>> done;
  auto submit = [&](const std::string& path) {
    c->submit(get(path), [&, path](client::CallResult r) {
      std::lock_guard<std::mutex> lock(mu);
      done.emplace_back(path, std::move(r));
      cv.notify_all();
    });
  };
  auto finished = [&](const std::string& path) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& d : done) {
      if (d.first == path) return true;
    }
    return false;
  };
  const auto t0 = std::chrono::steady_clock::now();
  submit("/long");
  const int old_connection = connection_of("/long");
  submit("/young");  // the connection is younger than its lifetime: a second stream on it
  const int young_connection = connection_of("/young");
  // On a machine so loaded that the connection aged already, the young call may have moved.
  if (std::chrono::steady_clock::now() - t0 < milliseconds(900)) {
    EXPECT_EQ(young_connection, old_connection);
  }
  // Past the lifetime, counted from before the long call's request arrived.
  std::this_thread::sleep_for(milliseconds(1200));
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_FALSE(finished("/long")) << "the long call ended before call " << i << " after the lifetime";
    submit("/late");
    connection_of("/late", i);  // one after another: each finds the old connection still busy
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(40), [&] { return done.size() >= 6; }));
    ASSERT_EQ(done.size(), 6u);
    for (const auto& [path, r] : done) {
      ASSERT_TRUE(r.ok()) << path << ": " << r.error.message();
      EXPECT_EQ(r.response->http_version, "2");
      if (path == "/long") {
        EXPECT_EQ(r.response->body, "long");
      }
    }
  }
  const std::set<int> late = connections_of("/late");
  EXPECT_EQ(late.size(), 1u) << "the calls after the lifetime did not share one new connection";
  EXPECT_EQ(late.count(old_connection), 0u) << "a stream was opened on the connection past its lifetime";
  EXPECT_EQ(server().requests("/late").size(), 4u);
  EXPECT_EQ(server().requests("/long").size(), 1u);
  if (transport::h2::active()) {
    EXPECT_GT(transport::h2::sessions_aged(), aged_before);
  }
}

// A blocking call holds a connection of its own: one that aged during the call takes no further call, though
// libcurl counts ages in whole seconds and would reuse it up to a second longer.
// F132
TEST_F(BusyConnectionLifetime, AConnectionThatAgedDuringABlockingCallTakesNoFurtherCall) {
  server().script("/long", json::array({{{"status", 200}, {"body", "long"}, {"delay_ms", 1300}}}));
  auto c = make();
  ASSERT_NE(c, nullptr);
  client::CallResult first = c->execute(get("/long"));
  ASSERT_TRUE(first.ok()) << first.error.message();
  EXPECT_EQ(first.response->body, "long");
  EXPECT_EQ(first.response->http_version, "2");
  client::CallResult next = c->execute(get("/next"));
  ASSERT_TRUE(next.ok()) << next.error.message();
  EXPECT_EQ(next.response->attempts, 1);
  EXPECT_NE(connection_of("/next"), connection_of("/long"));
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::transport
