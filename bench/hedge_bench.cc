// Hedged requests (docs/retries.md §6.8, issue 37): a local dependency whose p99 is about 20x its p50 — 2 % of
// its answers are held 100 ms, the rest 5 ms, drawn per request — called by two clients of one runtime, one
// without hedging and one with hedge {"delay": "p95"}, in interleaved rounds so both see the same machine.
// Prints each client's p50, p99 and requests sent per call, and the ratios (goal: p99 cut by half or more for
// at most 10 % more requests). Printed, never asserted: a benchmark, not a test.
// Run: build/<release>/bench/hedge_bench [rounds] [calls per round]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/runtime.h"

namespace {

using namespace humus;  // NOLINT(google-build-using-namespace): a benchmark file
using Steady = std::chrono::steady_clock;

constexpr int kFastMs = 5;
constexpr int kSlowMs = 100;
constexpr double kSlowShare = 0.02;

// A loopback HTTP/1.1 server, a thread per connection, keep-alive; each request's latency drawn on its own.
class SlowTailServer {
 public:
  SlowTailServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 128) != 0) std::abort();
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_ = std::thread([this] { accept_loop(); });
  }
  ~SlowTailServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    accept_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (const int c : conns_) ::shutdown(c, SHUT_RDWR);
    for (std::thread& t : workers_) t.join();
  }
  int port() const { return port_; }
  uint64_t requests() const { return requests_.load(); }

 private:
  void accept_loop() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      const int one = 1;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard<std::mutex> lock(mu_);
      conns_.push_back(c);
      workers_.emplace_back([this, c] { serve(c); });
    }
  }
  bool slow() {
    std::lock_guard<std::mutex> lock(rng_mu_);
    return std::bernoulli_distribution(kSlowShare)(rng_);
  }
  void serve(int c) {
    std::string in;
    char buf[4096];
    for (;;) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) {
          ::close(c);
          return;
        }
        in.append(buf, static_cast<size_t>(n));
      }
      in.erase(0, end + 4);  // GETs only: no body
      requests_.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(slow() ? kSlowMs : kFastMs));
      static constexpr char kReply[] = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
      if (::write(c, kReply, sizeof kReply - 1) < 0) {
        ::close(c);
        return;
      }
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> requests_{0};
  std::thread accept_;
  std::mutex mu_;
  std::vector<int> conns_;
  std::vector<std::thread> workers_;
  std::mutex rng_mu_;
  std::mt19937_64 rng_{37};
};

struct Tally {
  std::vector<double> ms;
  uint64_t attempts = 0;
  uint64_t calls = 0;
  uint64_t failed = 0;
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// `calls` calls from `threads` threads at once.
void round(client::Client& c, const std::string& url, int calls, int threads, Tally& t) {
  std::mutex mu;
  std::atomic<int> next{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) {
    ts.emplace_back([&] {
      while (next.fetch_add(1) < calls) {
        client::Request r;
        r.method = "GET";
        r.url = url;
        const Steady::time_point start = Steady::now();
        client::CallResult out = c.execute(r);
        const double ms = std::chrono::duration<double, std::milli>(Steady::now() - start).count();
        std::lock_guard<std::mutex> lock(mu);
        t.ms.push_back(ms);
        t.attempts += static_cast<uint64_t>(out.attempts);
        ++t.calls;
        if (!out.ok()) ++t.failed;
      }
    });
  }
  for (std::thread& th : ts) th.join();
}

std::unique_ptr<client::Client> make(client::Runtime& rt, int port, bool hedge) {
  settings::Settings s;
  s.base_url = "http://127.0.0.1:" + std::to_string(port);
  s.max_attempts = 3;
  if (hedge) s.hedge.emplace();  // {"delay": "p95", "max": 2}
  return client::Client::create(rt, s).value();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 10;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 200;
  const int threads = 4;
  SlowTailServer server;
  client::Runtime rt{client::RuntimeOptions{}};
  auto plain = make(rt, server.port(), false);
  auto hedged = make(rt, server.port(), true);
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/";
  Tally a, b;
  for (int r = 0; r < rounds; ++r) {  // interleaved: each round both clients, alternating who goes first
    if (r % 2 == 0) {
      round(*plain, url, calls, threads, a);
      round(*hedged, url, calls, threads, b);
    } else {
      round(*hedged, url, calls, threads, b);
      round(*plain, url, calls, threads, a);
    }
  }
  const auto line = [](const char* name, const Tally& t) {
    std::printf("%-14s calls %6llu  p50 %7.2f ms  p99 %7.2f ms  requests/call %.4f  failed %llu\n", name,
                static_cast<unsigned long long>(t.calls), percentile(t.ms, 50), percentile(t.ms, 99),
                static_cast<double>(t.attempts) / static_cast<double>(t.calls),
                static_cast<unsigned long long>(t.failed));
  };
  std::printf("dependency: %d %% of answers %d ms, the rest %d ms; %d rounds x %d calls x 2 clients, %d threads\n",
              static_cast<int>(kSlowShare * 100), kSlowMs, kFastMs, rounds, calls, threads);
  line("no hedging", a);
  line("hedge p95", b);
  const double p99_ratio = percentile(b.ms, 99) / percentile(a.ms, 99);
  const double req_ratio = (static_cast<double>(b.attempts) / static_cast<double>(b.calls)) /
                           (static_cast<double>(a.attempts) / static_cast<double>(a.calls));
  std::printf("hedge / none: p50 x%.3f  p99 x%.3f (goal <= 0.5)  requests/call x%.4f (goal <= 1.10)\n",
              percentile(b.ms, 50) / percentile(a.ms, 50), p99_ratio, req_ratio);
  std::printf("server saw %llu requests\n", static_cast<unsigned long long>(server.requests()));
  return 0;
}
