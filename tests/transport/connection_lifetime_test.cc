// A pooled connection past max_connection_lifetime takes no new request (docs/transport.md §10.1): the next
// request opens a new connection, so the name is resolved and the certificate verified again. Tested on the
// transport itself: no client setting reaches max_connection_lifetime yet (tests/fault-coverage.md, F33).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/test_server.h"
#include "transport/curl_transport.h"

namespace humus::transport {
namespace {

using std::chrono::milliseconds;

class ConnectionLifetimeTest : public humus::test::WithTestServer {
 protected:
  std::unique_ptr<Transport> make(Duration lifetime) {
    TransportConfig c;
    c.host = "payments";
    c.https = true;
    c.ca_file = server().ca_file();
    c.max_connection_lifetime = lifetime;
    c.connect_to.push_back(server().host_port("https") + ":" + server().address("https"));
    Result<std::unique_ptr<Transport>> t = make_curl_transport(c);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return t.ok() ? std::move(t).value() : nullptr;
  }

  // One GET of `path`; the id of the connection the server saw it on.
  static int connection_of(Transport& t, const std::string& path) {
    WireRequest r;
    r.method = "GET";
    r.url = server().url("https", path);
    AttemptLimits limits;
    limits.attempt_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    limits.call_deadline = limits.attempt_deadline;
    WireResult out = t.perform(r, limits, nullptr);
    EXPECT_EQ(out.error, Code::kOk) << out.message;
    const auto records = server().requests(path);
    return records.empty() ? -1 : records.back()["connection"].get<int>();
  }
};

// F33, S6
TEST_F(ConnectionLifetimeTest, AConnectionPastItsLifetimeIsNotReused) {
  auto young = make(std::chrono::minutes(10));
  const int a = connection_of(*young, "/a");
  std::this_thread::sleep_for(milliseconds(1200));
  EXPECT_EQ(connection_of(*young, "/b"), a) << "the control: a connection within its lifetime is reused";

  auto old = make(std::chrono::seconds(1));
  const int c = connection_of(*old, "/c");
  EXPECT_EQ(connection_of(*old, "/d"), c) << "reused at once, within its second";
  std::this_thread::sleep_for(milliseconds(2100));
  EXPECT_NE(connection_of(*old, "/e"), c) << "a connection past max_connection_lifetime took a new request";
}

}  // namespace
}  // namespace humus::transport
