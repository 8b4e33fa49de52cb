// Fork safety (docs/fork.md §23): a client made before fork() keeps working in the child. Pre-fork servers
// (gunicorn with preload_app, uWSGI, PHP-FPM, Puma) build the app, and its clients, in the master and then fork
// their workers.
//
// What a child inherits and must not use: the parent's connections (a byte written, a TLS close_notify or an
// HTTP/2 GOAWAY sent, or a shutdown() from the child would reach the parent's peer, or end the parent's
// connection), and the event loop, whose thread does not exist in the child and whose epoll set is the
// parent's (an epoll descriptor copied by fork names the same set). So:
// - every socket libcurl opens is noted here; in the child, before fork() returns, a dead socket takes the
//   number of each one noted, so the child holds no reference to the parent's connections and whatever libcurl
//   later sends on them goes nowhere (the child's copies are closed without any protocol shutdown);
// - a generation, bumped by the same handler, tells the transports and the runtime on their next use that
//   they were forked: they make their libcurl handles and their event loop anew (CurlTransport, Runtime).
//
// Hot path: one relaxed load of a global and a compare per call; noting a socket takes a lock once per
// connection opened and closed, not per request.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/mutex.h"

namespace humus::transport {

namespace detail {
// Bumped only by the child handler, in the child's only thread before fork() returns there: every thread the
// child starts later is ordered after it, so relaxed loads are enough.
extern std::atomic<uint64_t> fork_generation;
// Set in a child where a socket could not be replaced by a dead one (no descriptor for it): libcurl must then
// never take those connections apart (it would close them with a TLS close_notify the parent's peer reads).
extern std::atomic<bool> inherited_sockets_live;
}  // namespace detail

// How many forks lie between the process that loaded the library and this one (0: not a forked child).
inline uint64_t fork_generation() noexcept { return detail::fork_generation.load(std::memory_order_relaxed); }

// Whether the parent's handles must be left alone in this child rather than taken apart (see above).
inline bool inherited_sockets_live() noexcept {
  return detail::inherited_sockets_live.load(std::memory_order_relaxed);
}

// Installs the fork handlers (pthread_atfork), once per process. Thread-safe.
void watch_forks();

// The lock under which a forked child's objects are adopted (a transport drops its parent's handles, the
// runtime its parent's loop). fork() waits for it (the prepare handler takes it), so a fork never lands in the
// middle of an adoption; it is free in every child.
Mutex& fork_mutex();

// A socket libcurl opened (on_open_socket) or closed (on_close_socket). Any thread.
void note_socket_opened(int fd);
void note_socket_closed(int fd);

// For tests: how many sockets are noted now.
size_t noted_sockets();

}  // namespace humus::transport
