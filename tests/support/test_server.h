#pragma once

// The C++ side of tests/server/humus_test_server.py: spawns the scriptable test server and drives its
// control API, so GoogleTest integration tests run the real client against real loopback sockets, TLS,
// HTTP/1.1 and HTTP/2 (tests/server/README.md describes listeners, scripts and records).
//
//   TEST_F(MyIntegrationTest, RetriesThrough503) {   // MyIntegrationTest : humus::test::WithTestServer
//     server().script("/pay", R"([{"status": 503}, {"status": 200}])"_json);
//     ... call server().url("https", "/pay") with a runtime resolving server().resolve_entry("https") ...
//     EXPECT_EQ(server().requests("/pay").size(), 2u);
//   }
//
// Starting the server costs ~0.3 s (Python start-up), so a test binary shares one: TestServer::shared().

#include <gtest/gtest.h>
#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace humus::test {

class TestServer {
 public:
  struct Options {
    // Where the certificates live (created if absent). Empty: $HUMUS_TEST_CERTS_DIR, else a directory in the
    // build tree shared by every test process (creation is locked, so ctest -j is safe).
    std::string certs_dir;
    // The interpreter. Empty: $HUMUS_TEST_PYTHON, else `python3` from PATH. It needs the packages of
    // tests/server/requirements.txt.
    std::string python;
  };

  // Starts the server and waits (at most 10 s) for its ready line; throws std::runtime_error on failure.
  TestServer();
  explicit TestServer(const Options& options);
  // Closes the server's stdin, which stops it; kills it if it has not exited after 2 s.
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  // The process-wide instance, started on first use and stopped at exit. Not thread-safe to drive from
  // several threads at once (tests drive it from the test body).
  static TestServer& shared();

  // A listener's port: http, https, https_h1, mtls, cn_only, untrusted, tls11. 0 for tls11 when the
  // local OpenSSL cannot offer TLS 1.1 (ready()["notes"] says why). Throws for an unknown name.
  int port(std::string_view listener) const;
  // "https://payments:PORT/path" for TLS listeners (reach them through resolve_entry), or
  // "http://127.0.0.1:PORT/path" for the plain one.
  std::string url(std::string_view listener, std::string_view path = "/") const;
  // "payments:PORT:127.0.0.1", for CURLOPT_RESOLVE or the runtime's {"resolve": …} option (docs/transport.md §10.6).
  std::string resolve_entry(std::string_view listener) const;
  // "payments:PORT" and "127.0.0.1:PORT", the two sides of a runtime resolve mapping.
  std::string host_port(std::string_view listener) const;
  std::string address(std::string_view listener) const;

  std::string certs_dir() const;
  std::string ca_file() const;      // the test CA: trust it and nothing else
  std::string client_cert() const;  // a client certificate the mtls listener accepts
  std::string client_key() const;
  const nlohmann::json& ready() const { return ready_; }

  // Each request to PATH consumes the next step of STEPS (a JSON array); the last repeats when
  // REPEAT_LAST, otherwise the default echo follows. Throws when the server refuses the script.
  void script(std::string_view path, const nlohmann::json& steps, bool repeat_last = true);
  // The requests recorded for PATH, in arrival order.
  std::vector<nlohmann::json> requests(std::string_view path);
  // Forgets every script and record.
  void reset();
  // {"connections": open connections, "tasks": live server tasks}.
  nlohmann::json stats();

 private:
  nlohmann::json control(std::string_view method, std::string_view target, const std::string* body);
  void start(const Options& options);
  void stop();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  nlohmann::json ready_;
};

// tests/support/h2_fault_peer.py: an HTTP/2 peer over TLS (ALPN h2 only) that breaks connection-level rules —
// `window0`, `streams1`, `silent`, `continuation` (the script's docstring says what each does). It presents the
// test server's certificate (CN=payments, SAN IP:127.0.0.1, made in the same directory), so trust ca_file().
// With kHostile, tests/support/h2_hostile_peer.py: the same peer answering requests with a fault of MODE —
// connection-level violations, malformed heads, a 48 KB head, refusals — from a given request on.
class H2FaultPeer {
 public:
  static constexpr std::string_view kFault = "h2_fault_peer.py";
  static constexpr std::string_view kHostile = "h2_hostile_peer.py";

  // Starts tests/support/SCRIPT --mode MODE OPTIONS... and waits (at most 10 s) for its port; throws
  // std::runtime_error on failure.
  explicit H2FaultPeer(std::string_view mode, const std::vector<std::string>& options = {},
                       std::string_view script = kFault);
  ~H2FaultPeer();
  H2FaultPeer(const H2FaultPeer&) = delete;
  H2FaultPeer& operator=(const H2FaultPeer&) = delete;

  int port() const { return port_; }
  std::string ca_file() const { return certs_dir_ + "/ca.pem"; }
  // Stops the peer and returns its counters: connections, requests, ended, body_bytes, body_bytes_after_ack,
  // pings, excess, excess_after_ack, continuations, max_open; kHostile's add posts, faults, posts_refused and
  // per_connection (a list).
  nlohmann::json finish();

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int port_ = 0;
  std::string certs_dir_;
};

// A fixture whose tests share the process's server, with scripts and records reset before each test.
class WithTestServer : public ::testing::Test {
 protected:
  void SetUp() override { server().reset(); }
  static TestServer& server() { return TestServer::shared(); }
};

}  // namespace humus::test
