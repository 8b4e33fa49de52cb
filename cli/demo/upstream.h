#pragma once
// The demo's dependency: a small HTTP/1.1 server on 127.0.0.1 (an ephemeral port), keep-alive, one thread per
// connection, whose answers follow the schedule's phase:
//   healthy, recovering  200 at once
//   slow                 every 4th request answered after `slow_delay` (past the client's attempt timeout),
//                        the others after 10 ms
//   failing              503 with Retry-After: 1, and every 4th request a connection reset (TCP RST)
// Deterministic patterns rather than random draws, so every run tells the same story.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <thread>

#include "demo/schedule.h"

namespace humus::cli::demo {

class Upstream {
 public:
  struct Counts {
    uint64_t requests = 0;
    uint64_t ok = 0;
    uint64_t delayed = 0;
    uint64_t unavailable = 0;  // 503
    uint64_t resets = 0;
  };

  Upstream(Schedule schedule, std::chrono::milliseconds slow_delay);
  ~Upstream();
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  // Binds 127.0.0.1:0 and starts accepting; false with the reason. The phases count from `epoch`.
  bool start(std::chrono::steady_clock::time_point epoch, std::string& why);
  // Closes the listener and every connection, and joins their threads. Idempotent.
  void stop();

  uint16_t port() const { return port_; }
  Counts counts() const;

 private:
  struct Connection {
    int fd = -1;  // -1 once the connection's thread closed it (guarded by mu_)
    std::thread thread;
    bool finished = false;  // guarded by mu_
  };

  void accept_loop();
  void serve(Connection* c);
  // Closes the connection's socket (with an RST when `reset`), under mu_ so stop() never touches a reused fd.
  void close_connection(Connection* c, bool reset);
  // Waits `delay`, returning early (false) if the client went away or the server stops.
  bool wait_or_gone(int fd, std::chrono::milliseconds delay);
  Phase phase_now() const;
  void reap_finished();

  const Schedule schedule_;
  const std::chrono::milliseconds slow_delay_;
  std::chrono::steady_clock::time_point epoch_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the accept loop on stop
  uint16_t port_ = 0;
  std::thread acceptor_;
  // Relaxed: a flag polled between blocking calls, which the fds' shutdown also interrupts.
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::list<Connection> connections_;  // guarded by mu_ (a list: Connection* stay valid)

  // Relaxed: counters, read only for the report.
  std::atomic<uint64_t> requests_{0}, ok_{0}, delayed_{0}, unavailable_{0}, resets_{0};
};

}  // namespace humus::cli::demo
