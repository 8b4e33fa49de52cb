// S6, F33: a connection older than max_connection_lifetime takes no new request (docs/transport.md §10.1),
// so a rotated certificate or a moved backend is met again within the lifetime.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/raw_peer.h"
#include "transport/curl_transport.h"

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

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::transport
