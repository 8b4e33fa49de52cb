#include "transport/fork.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <unordered_set>

namespace humus::transport {

namespace detail {
std::atomic<uint64_t> fork_generation{0};
std::atomic<bool> inherited_sockets_live{false};
}  // namespace detail

namespace {

// Never destroyed: a thread may still open or close a socket while the process exits.
struct Noted {
  Mutex mu;
  std::unordered_set<int> sockets GUARDED_BY(mu);
};

Noted& noted() {
  static Noted* const n = new Noted();
  return *n;
}

// An unconnected socket, made by the prepare handler for each fork (so the child handler need make none) and
// closed again on both sides once the child's copies are in place: no descriptor is held between forks, so
// a process that never forks sees none more than it opened. Whatever libcurl sends or reads on a copy of it
// fails at once (ENOTCONN), without a signal, and reaches no peer. -1 when it could not be made: the child
// then keeps its copies of the parent's connections open and the transports leave their parent's handles
// alone (inherited_sockets_live). Relaxed: written and read only under the locks before_fork takes.
std::atomic<int> dead_socket{-1};

Mutex& adoption_mutex() {
  static Mutex* const m = new Mutex();
  return *m;
}

// The handlers run around fork() in whichever thread calls it. Both locks are held across the fork, so in the
// child neither is left held by a thread that no longer exists, and the set of sockets is whole.
void before_fork() NO_THREAD_SAFETY_ANALYSIS {
  adoption_mutex().lock();
  noted().mu.lock();
  if (dead_socket.load(std::memory_order_relaxed) < 0) {
    dead_socket.store(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), std::memory_order_relaxed);
  }
}

void close_dead_socket() {
  const int dead = dead_socket.exchange(-1, std::memory_order_relaxed);
  if (dead >= 0) ::close(dead);
}

void in_parent() NO_THREAD_SAFETY_ANALYSIS {
  close_dead_socket();
  noted().mu.unlock();
  adoption_mutex().unlock();
}

// The child's only thread: only async-signal-safe calls (dup3) and no allocation. Each inherited socket's
// number becomes a copy of the dead socket; libcurl closes the copy when it drops the connection, which ends
// nothing of the parent's.
void in_child() NO_THREAD_SAFETY_ANALYSIS {
  Noted& n = noted();
  const int dead = dead_socket.load(std::memory_order_relaxed);
  for (const int fd : n.sockets) {
    if (dead < 0 || ::dup3(dead, fd, O_CLOEXEC) < 0) {
      detail::inherited_sockets_live.store(true, std::memory_order_relaxed);
    }
  }
  close_dead_socket();  // close(2) is async-signal-safe; the copies stay
  detail::fork_generation.fetch_add(1, std::memory_order_relaxed);
  n.mu.unlock();
  adoption_mutex().unlock();
}

}  // namespace

void watch_forks() {
  static std::once_flag once;
  std::call_once(once, [] {
    noted();
    adoption_mutex();
    pthread_atfork(&before_fork, &in_parent, &in_child);
  });
}

Mutex& fork_mutex() { return adoption_mutex(); }

void note_socket_opened(int fd) {
  Noted& n = noted();
  MutexLock lock(n.mu);
  n.sockets.insert(fd);
}

void note_socket_closed(int fd) {
  Noted& n = noted();
  MutexLock lock(n.mu);
  n.sockets.erase(fd);
}

size_t noted_sockets() {
  Noted& n = noted();
  MutexLock lock(n.mu);
  return n.sockets.size();
}

}  // namespace humus::transport
