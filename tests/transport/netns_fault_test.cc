// The fault catalogue's network cases (tests/fault-coverage.md) that need a network of their own: a route
// that swallows every packet (blackhole), a route that is unreachable, a resolver that never answers, a port
// range that runs out; with nft(8), an ICMP reject, a drop on the way out and random loss. The ctest case
// `faults.netns` runs these tests in a private network namespace (tests/support/run_in_netns.sh:
// `unshare -n`, as root) with HUMUS_NETNS=1; anywhere else they skip, saying so. Inside, SetUpTestSuite
// builds the network with `ip`: lo up, a veth pair v0/v1 with 10.99.0.2/24 on v0 and a permanent neighbour
// entry for 10.99.0.1, so a SYN to 10.99.0.1 leaves and nothing ever answers it.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "support/raw_peer.h"

namespace humus::client {
namespace {
namespace HUMUS_UNITY_ID {

using humus::test::RawConnection;
using humus::test::RawPeer;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kBlackhole = "10.99.0.1";    // on the veth, never answered
constexpr const char* kUnreachable = "10.98.0.1";  // `ip route add unreachable`: EHOSTUNREACH at once

bool in_private_netns() {
  const char* v = std::getenv("HUMUS_NETNS");
  return v != nullptr && std::string(v) == "1";
}

int run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// The namespace's own ephemeral port range (net.ipv4.ip_local_port_range is per network namespace).
bool set_port_range(const char* range) {
  std::ofstream f("/proc/sys/net/ipv4/ip_local_port_range");
  f << range << "\n";
  f.close();
  return f.good();
}

// An nft table of the test's own in the namespace, deleted when the test ends; `rules` are added to its
// chain `in` (input hook) or `out` (output hook).
class NftTable {
 public:
  explicit NftTable(std::string name) : name_(std::move(name)) {
    const std::string chain = "nft add chain inet " + name_;
    ok_ = run("nft add table inet " + name_) == 0 &&
          run(chain + " in '{ type filter hook input priority 0; policy accept; }'") == 0 &&
          run(chain + " out '{ type filter hook output priority 0; policy accept; }'") == 0;
  }
  ~NftTable() { run("nft delete table inet " + name_); }
  NftTable(const NftTable&) = delete;
  NftTable& operator=(const NftTable&) = delete;

  bool add(const std::string& chain, const std::string& rule) {
    return ok_ && run("nft add rule inet " + name_ + " " + chain + " " + rule) == 0;
  }

 private:
  std::string name_;
  bool ok_ = false;
};

bool have_nft() { return run("command -v nft") == 0; }

class NetnsFaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!in_private_netns()) return;
    // The resolver gives up after 1 s per query, once (glibc reads RES_OPTIONS at its first lookup).
    setenv("RES_OPTIONS", "timeout:1 attempts:1", 1);
    network_ok_ = run("ip link set lo up") == 0 && run("ip link add v0 type veth peer name v1") == 0 &&
                  run("ip link set v0 up") == 0 && run("ip link set v1 up") == 0 &&
                  run("ip addr add 10.99.0.2/24 dev v0") == 0 &&
                  run("ip neigh add 10.99.0.1 lladdr 02:00:00:00:00:01 dev v0 nud permanent") == 0 &&
                  run("ip route add unreachable 10.98.0.0/24") == 0 &&
                  run("ip route add default via 10.99.0.1") == 0;  // a resolver elsewhere: blackholed too
  }

  void SetUp() override {
    if (!in_private_netns()) {
      GTEST_SKIP() << "needs a private network namespace: run by the ctest case faults.netns "
                      "(tests/support/run_in_netns.sh)";
    }
    ASSERT_TRUE(network_ok_) << "could not build the namespace's network with ip(8)";
  }

  std::unique_ptr<Client> make(const std::string& base_url, settings::Settings s = {}) {
    s.base_url = base_url;
    s.backoff_base = milliseconds(1);
    s.backoff_max = milliseconds(2);
    Result<std::unique_ptr<Client>> c = Client::create(runtime_, s);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Request get(const std::string& base_url) {
    Request r;
    r.url = base_url + "/";
    return r;
  }

  static inline bool network_ok_ = false;
  Runtime runtime_{RuntimeOptions{}};
};

// F08: a SYN nobody answers: each attempt ends at the connect timeout, a GET is retried, each a failure.
TEST_F(NetnsFaultTest, ABlackholedAddressIsAConnectTimeoutRetried) {
  settings::Settings s;
  s.max_attempts = 2;
  s.timeout = milliseconds(30000);          // neither the call's deadline
  s.attempt_timeout = milliseconds(20000);  // nor the attempt's can end it: only the connect timeout
  s.connect_timeout = milliseconds(300);
  const std::string base = std::string("http://") + kBlackhole + ":8080";
  auto c = make(base, s);
  const auto t0 = Clock::now();
  CallResult out = c->execute(get(base));
  const auto took = Clock::now() - t0;
  ASSERT_FALSE(out.ok()) << out.response->status;
  EXPECT_EQ(out.error.code(), Code::kTimeout) << out.error.message();
  EXPECT_EQ(out.error.message().find("attempt timed out"), std::string::npos) << out.error.message();
  EXPECT_EQ(out.error.message().find("deadline"), std::string::npos) << out.error.message();
  EXPECT_EQ(out.attempts, 2);
  EXPECT_GE(took, milliseconds(550));
  EXPECT_EQ(c->breaker().counts().failures, 2u);
}

// F09: an unreachable host (the errno an ICMP host-unreachable gives, from the route table): a connect
// error at once, retried, each a breaker failure.
TEST_F(NetnsFaultTest, AnUnreachableHostIsAConnectErrorAtOnce) {
  const std::string base = std::string("http://") + kUnreachable + ":8080";
  auto c = make(base);
  CallResult out = c->execute(get(base));
  ASSERT_FALSE(out.ok()) << out.response->status;
  EXPECT_EQ(out.error.code(), Code::kConnect) << out.error.message();  // not a timeout: at once
  EXPECT_EQ(out.attempts, 3);
  EXPECT_EQ(c->breaker().counts().failures, 3u);
}

// F02: the resolver never answers (its queries go into the blackhole): a resolve error once glibc gives
// up, retried, a breaker failure (docs/retries.md §5.3).
TEST_F(NetnsFaultTest, AResolverThatNeverAnswersIsAResolveErrorRetried) {
  std::ifstream conf("/etc/resolv.conf");
  std::string word, server;
  while (conf >> word) {
    if (word == "nameserver" && conf >> server) break;
  }
  if (server.empty() || server.rfind("127.", 0) == 0 || server.find(':') != std::string::npos) {
    GTEST_SKIP() << "the resolver (" << (server.empty() ? "none" : server)
                 << ") is not an IPv4 address off this host: the blackhole route cannot swallow its queries";
  }
  settings::Settings s;
  s.max_attempts = 2;
  s.timeout = milliseconds(9000);
  s.attempt_timeout = milliseconds(4000);
  s.connect_timeout = milliseconds(4000);
  const std::string base = "http://humus-dns-timeout.example:8080";
  auto c = make(base, s);
  const auto t0 = Clock::now();
  CallResult out = c->execute(get(base));
  const auto took = Clock::now() - t0;
  ASSERT_FALSE(out.ok()) << out.response->status;
  EXPECT_EQ(out.error.code(), Code::kResolve) << out.error.message();
  EXPECT_EQ(out.attempts, 2);
  EXPECT_GE(took, milliseconds(1800)) << "the lookups failed without waiting: not a timeout";
  EXPECT_EQ(c->breaker().counts().failures, 2u);
}

// F12: out of ephemeral ports (a two-port range, per namespace): a local shortage, HUMUS_E_RESOURCE: not
// retried, no breaker verdict, nothing sent; the same client works once ports are free again.
TEST_F(NetnsFaultTest, OutOfEphemeralPortsIsResourceNotRetriedNoVerdict) {
  RawPeer peer([](RawConnection& c) {
    while (c.read_request()) c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  ASSERT_TRUE(set_port_range("40000 40001"));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(peer.port()));
  std::vector<int> hogs;
  for (int i = 0; i < 16; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd);
      break;
    }
    hogs.push_back(fd);
  }
  const std::string base = "http://127.0.0.1:" + std::to_string(peer.port());
  auto c = make(base);
  CallResult starved = c->execute(get(base));
  for (int fd : hogs) close(fd);
  set_port_range("32768 60999");
  ASSERT_FALSE(hogs.empty());
  ASSERT_LT(hogs.size(), 16u) << "the port range did not run out";
  ASSERT_FALSE(starved.ok()) << starved.response->status;
  EXPECT_EQ(starved.error.code(), Code::kResource) << starved.error.message();
  EXPECT_EQ(starved.attempts, 1);
  const breaker::Counts counts = c->breaker().counts();
  EXPECT_EQ(counts.failures + counts.successes, 0u);
  EXPECT_DOUBLE_EQ(c->budget().tokens(), 10.0);
  EXPECT_EQ(peer.requests(), static_cast<int>(0));
  CallResult again = c->execute(get(base));
  EXPECT_TRUE(again.ok()) << again.error.message();
}

// F10: an ICMP port-unreachable for the SYN (an nft reject): a connect error at once, retried.
TEST_F(NetnsFaultTest, AnIcmpPortUnreachableIsAConnectErrorAtOnce) {
  if (!have_nft()) GTEST_SKIP() << "nft is not installed: the ICMP reject cannot be made";
  RawPeer peer([](RawConnection& c) {
    while (c.read_request()) c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  NftTable t("f10");
  const std::string port = std::to_string(peer.port());
  ASSERT_TRUE(t.add("in", "tcp dport " + port + " reject with icmp type port-unreachable"));
  const std::string base = "http://127.0.0.1:" + std::to_string(peer.port());
  auto c = make(base);
  CallResult out = c->execute(get(base));
  ASSERT_FALSE(out.ok()) << out.response->status;
  EXPECT_EQ(out.error.code(), Code::kConnect) << out.error.message();  // not a timeout: at once
  EXPECT_EQ(out.attempts, 3);
  EXPECT_EQ(peer.connections(), 0);
  EXPECT_EQ(c->breaker().counts().failures, 3u);
}

// F03: the resolver's queries dropped in the host's own output chain fail at once (EPERM), not by a
// timeout: still a resolve error, retried, a breaker failure.
TEST_F(NetnsFaultTest, ResolverQueriesDroppedOnTheWayOutAreAResolveErrorAtOnce) {
  if (!have_nft()) GTEST_SKIP() << "nft is not installed: the output drop cannot be made";
  NftTable t("f03");
  ASSERT_TRUE(t.add("out", "udp dport 53 drop"));
  ASSERT_TRUE(t.add("out", "tcp dport 53 drop"));
  const std::string base = "http://humus-dns-dropped.example:8080";
  auto c = make(base);
  CallResult out = c->execute(get(base));
  ASSERT_FALSE(out.ok()) << out.response->status;
  EXPECT_EQ(out.error.code(), Code::kResolve) << out.error.message();  // an EPERM on send, not a timeout
  EXPECT_EQ(out.attempts, 3);
  EXPECT_EQ(c->breaker().counts().failures, 3u);
}

// F67: a fifth of the server's packets lost (nft numgen): TCP retransmits, the call succeeds with the body
// whole, once, within its deadline.
TEST_F(NetnsFaultTest, TwentyPercentPacketLossStillDeliversTheWholeBody) {
  if (!have_nft()) GTEST_SKIP() << "nft is not installed: the packet loss cannot be made";
  const std::string body(1 << 20, 'p');
  RawPeer peer([&body](RawConnection& c) {
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    while (c.read_request()) c.write(head + body);
  });
  ASSERT_EQ(run("ip link set lo mtu 1500"), 0);  // many packets, so the loss is spread over the transfer
  NftTable t("f67");
  ASSERT_TRUE(t.add("in", "tcp sport " + std::to_string(peer.port()) + " numgen random mod 100 lt 20 drop"));
  settings::Settings s;
  s.timeout = std::chrono::seconds(30);
  s.attempt_timeout = std::chrono::seconds(15);
  s.connect_timeout = std::chrono::seconds(10);
  const std::string base = "http://127.0.0.1:" + std::to_string(peer.port());
  auto c = make(base, s);
  CallResult out = c->execute(get(base));
  run("ip link set lo mtu 65536");
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->body.size(), body.size());
  EXPECT_EQ(out.response->attempts, 1);
  EXPECT_EQ(peer.requests(), 1);
}

// F66: a link capped at 4 Mbit/s (tc tbf on the namespace's own lo): the call succeeds, slower, in one
// attempt; a call whose deadline the transfer cannot meet ends at the deadline.
TEST_F(NetnsFaultTest, ABandwidthCapSlowsTheBodyAndTheDeadlineStillHolds) {
  const std::string body(512 * 1024, 'w');
  RawPeer peer([&body](RawConnection& c) {
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    while (c.read_request()) c.write(head + body);
  });
  ASSERT_EQ(run("ip link set lo mtu 1500"), 0);  // tbf's burst must hold a whole packet
  if (run("tc qdisc add dev lo root tbf rate 4mbit burst 16kb latency 200ms") != 0) {
    run("ip link set lo mtu 65536");
    GTEST_SKIP() << "tc tbf is not available here";
  }
  settings::Settings s;
  s.timeout = std::chrono::seconds(10);
  const std::string base = "http://127.0.0.1:" + std::to_string(peer.port());
  auto c = make(base, s);
  auto t0 = Clock::now();
  CallResult slow = c->execute(get(base));
  const auto took = Clock::now() - t0;
  Request tight = get(base);
  tight.timeout = milliseconds(300);
  CallResult cut = c->execute(tight);
  run("tc qdisc del dev lo root");
  run("ip link set lo mtu 65536");
  ASSERT_TRUE(slow.ok()) << slow.error.message();
  EXPECT_EQ(slow.response->body.size(), body.size());
  EXPECT_EQ(slow.response->attempts, 1);
  EXPECT_GE(took, milliseconds(700)) << "512 KiB at 4 Mbit/s takes about 1 s: the cap was not applied";
  ASSERT_FALSE(cut.ok()) << "512 KiB arrived within 300 ms through a 4 Mbit/s link";
  EXPECT_EQ(cut.error.code(), Code::kTimeout) << cut.error.message();
  EXPECT_NE(cut.error.message().find("the call's deadline passed"), std::string::npos) << cut.error.message();
}

// /etc/hosts (and, when given, /etc/gai.conf, which orders a name's addresses) replaced for as long as it
// lives, by bind mounts in the test's private mount namespace (tests/support/run_in_netns.sh).
class EtcOverride {
 public:
  EtcOverride(const std::string& hosts, const std::string& gai = "") {
    if (mkdtemp(dir_) == nullptr) return;
    hosts_ = std::string(dir_) + "/hosts";
    gai_ = std::string(dir_) + "/gai.conf";
    std::ofstream(hosts_) << hosts;
    std::ofstream(gai_) << gai;
    hosts_mounted_ = run("mount --bind " + hosts_ + " /etc/hosts") == 0;
    gai_mounted_ = hosts_mounted_ && !gai.empty() && run("mount --bind " + gai_ + " /etc/gai.conf") == 0;
    ok_ = hosts_mounted_ && (gai.empty() || gai_mounted_);
  }
  ~EtcOverride() {
    if (gai_mounted_) run("umount /etc/gai.conf");
    if (hosts_mounted_) run("umount /etc/hosts");
    std::remove(hosts_.c_str());
    std::remove(gai_.c_str());
    rmdir(dir_);
  }
  EtcOverride(const EtcOverride&) = delete;
  EtcOverride& operator=(const EtcOverride&) = delete;

  bool ok() const { return ok_; }
  // Rewrites the hosts file in place: /etc/hosts, bound to it, reads the new text at the next lookup.
  bool rewrite_hosts(const std::string& hosts) {
    std::ofstream f(hosts_, std::ios::trunc);
    f << hosts;
    f.close();
    return f.good();
  }

 private:
  char dir_[24] = "/tmp/humus-netns-XXXXXX";
  std::string hosts_, gai_;
  bool hosts_mounted_ = false, gai_mounted_ = false, ok_ = false;
};

// An HTTP/1.1 peer listening on every address of one port, answering each request with the address it was
// reached at ("127.0.0.2"), and counting connections by that address. Inside the namespace all of 127/8 is
// the loopback's, so a name can move from one address to another while its port stays.
class AddressEchoPeer {
 public:
  AddressEchoPeer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof addr;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(listen_fd_, 16) == 0 &&
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~AddressEchoPeer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    ::close(listen_fd_);
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    for (std::thread& t : threads_) t.join();
    for (int fd : fds_) ::close(fd);
  }
  AddressEchoPeer(const AddressEchoPeer&) = delete;
  AddressEchoPeer& operator=(const AddressEchoPeer&) = delete;

  int port() const { return port_; }
  // Connections accepted at `address`.
  int connections(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    return connections_[address];
  }

 private:
  void accept_loop() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      sockaddr_in local{};
      socklen_t len = sizeof local;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
      char text[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
      const std::string address = text;
      std::lock_guard<std::mutex> lock(mu_);
      ++connections_[address];
      fds_.push_back(fd);
      threads_.emplace_back([this, fd, address] {
        RawConnection c(fd, requests_);
        while (c.read_request()) {
          c.write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(address.size()) + "\r\n\r\n" + address);
        }
      });
    }
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::map<std::string, int> connections_;  // guarded by mu_
  std::vector<int> fds_;                    // guarded by mu_
  std::vector<std::thread> threads_;        // guarded by mu_
  std::thread acceptor_;
};

constexpr const char* kNoEtcOverride =
    "cannot bind-mount over /etc/hosts or /etc/gai.conf (needs a private mount namespace and an existing "
    "/etc/gai.conf)";

// A name with two addresses, the first a blackhole: libcurl moves to the second after half the connect
// timeout, inside one attempt: success, one attempt, one request. (libcurl 7.88 starts the second address only
// when driven again and sets no timer for it, so until the connection is up the client drives it at least
// every 20 ms; the curl 7.88.1 CLI fails here.) The name's addresses come from a hosts file and their order
// from a gai.conf.
// F04
TEST_F(NetnsFaultTest, ANameWhoseFirstAddressIsDeadIsReachedThroughTheSecond) {
  RawPeer peer([](RawConnection& c) {
    while (c.read_request()) c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  EtcOverride etc(std::string(kBlackhole) + " two.test\n127.0.0.1 two.test\n",
                  "precedence ::ffff:10.99.0.0/120 100\nprecedence ::ffff:0:0/96 10\n");
  if (!etc.ok()) GTEST_SKIP() << kNoEtcOverride;
  settings::Settings s;
  s.connect_timeout = std::chrono::seconds(2);
  const std::string base = "http://two.test:" + std::to_string(peer.port());
  auto c = make(base, s);
  const auto t0 = Clock::now();
  CallResult out = c->execute(get(base));
  const auto took = Clock::now() - t0;
  ASSERT_TRUE(out.ok()) << out.error.message();
  EXPECT_EQ(out.response->attempts, 1);
  EXPECT_EQ(peer.requests(), 1);
  EXPECT_GE(took, milliseconds(800)) << "the dead address was not tried first: the test tested nothing";
  EXPECT_EQ(c->breaker().counts().failures, 0u);
}

// A name with an IPv6 and an IPv4 address: nothing listens on the IPv6 one (refused), and the IPv4 peer
// presents a certificate for another name. The call fails with the certificate's verdict, not the refused
// IPv6 connect (curl issue 20608): HUMUS_E_TLS, one attempt, a breaker failure (docs/transport.md §10.3).
// F06
TEST_F(NetnsFaultTest, AnIpv6FailureThenAWrongIpv4CertificateIsReportedAsTheCertificate) {
  const std::string certs = std::string(HUMUS_TEST_CERTS_DIR) + "/bad";
  ASSERT_EQ(std::system(("bash " + std::string(HUMUS_SOURCE_DIR) + "/tests/support/make_bad_certs.sh '" + certs +
                         "' >/dev/null 2>&1").c_str()),
            0);
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  ASSERT_EQ(SSL_CTX_use_certificate_chain_file(ctx.get(), (certs + "/good.pem").c_str()), 1);
  ASSERT_EQ(SSL_CTX_use_PrivateKey_file(ctx.get(), (certs + "/good.key").c_str(), SSL_FILETYPE_PEM), 1);
  RawPeer peer([&ctx](RawConnection& c) {  // 127.0.0.1 only: [::1] on this port refuses
    SSL* ssl = SSL_new(ctx.get());
    SSL_set_fd(ssl, c.fd());
    SSL_accept(ssl);
    SSL_free(ssl);
  });
  EtcOverride etc("::1 six.test\n127.0.0.1 six.test\n");
  if (!etc.ok()) GTEST_SKIP() << kNoEtcOverride;
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_addr = in6addr_loopback;
  v6.sin6_port = htons(static_cast<uint16_t>(peer.port()));
  const int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool refused = connect(probe, reinterpret_cast<sockaddr*>(&v6), sizeof v6) != 0 && errno == ECONNREFUSED;
  close(probe);
  ASSERT_TRUE(refused) << "[::1] does not refuse: the IPv6 address cannot fail here";
  settings::Settings s;
  s.tls.emplace();
  s.tls->ca_file = certs + "/root.pem";
  const std::string base = "https://six.test:" + std::to_string(peer.port());
  auto c = make(base, s);
  CallResult out = c->execute(get(base));
  ASSERT_FALSE(out.ok()) << out.response->status;
  EXPECT_EQ(out.error.code(), Code::kTls) << out.error.message();
  EXPECT_NE(out.error.message().find("six.test"), std::string::npos) << out.error.message();
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(peer.connections(), 1);
  EXPECT_EQ(c->breaker().counts().failures, 1u);
}

// A name moves to another address (a rollout): a pooled connection keeps the old one while it is younger than
// max_connection_lifetime; the first call after the lifetime goes out on a new connection, which looks the
// name up again (libcurl's 60 s DNS cache would hand it the old address) and reaches the new one. Blocking
// and asynchronous calls alike.
// F133
TEST_F(NetnsFaultTest, TheCallAfterTheLifetimeReachesTheAddressTheNameHasNow) {
  for (const bool async : {false, true}) {
    SCOPED_TRACE(async ? "asynchronous" : "blocking");
    AddressEchoPeer peer;
    ASSERT_NE(peer.port(), 0);
    EtcOverride etc("127.0.0.1 moving.test\n");
    if (!etc.ok()) GTEST_SKIP() << kNoEtcOverride;
    settings::Settings s;
    s.max_connection_lifetime = std::chrono::seconds(1);
    s.max_attempts = 1;
    const std::string base = "http://moving.test:" + std::to_string(peer.port());
    auto c = make(base, s);
    ASSERT_NE(c, nullptr);
    auto call = [&]() -> CallResult {
      if (!async) return c->execute(get(base));
      std::mutex mu;
      std::condition_variable cv;
      std::optional<CallResult> out;
      c->submit(get(base), [&](CallResult r) {
        std::lock_guard<std::mutex> lock(mu);
        out = std::move(r);
        cv.notify_all();
      });
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return out.has_value(); });
      return std::move(*out);
    };
    const auto t0 = Clock::now();
    CallResult first = call();
    ASSERT_TRUE(first.ok()) << first.error.message();
    EXPECT_EQ(first.response->body, "127.0.0.1");
    ASSERT_TRUE(etc.rewrite_hosts("127.0.0.2 moving.test\n"));
    CallResult young = call();
    ASSERT_TRUE(young.ok()) << young.error.message();
    // Reused while young; on a machine so loaded that the connection aged already, it may have moved.
    if (Clock::now() - t0 < milliseconds(900)) {
      EXPECT_EQ(young.response->body, "127.0.0.1");
    }
    std::this_thread::sleep_for(milliseconds(1100));
    CallResult after = call();
    ASSERT_TRUE(after.ok()) << after.error.message();
    EXPECT_EQ(after.response->body, "127.0.0.2") << "the new connection went to the name's old address";
    EXPECT_EQ(after.response->attempts, 1);
    EXPECT_EQ(peer.connections("127.0.0.1"), 1);
    EXPECT_EQ(peer.connections("127.0.0.2"), young.response->body == "127.0.0.2" ? 2 : 1);
  }
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::client
