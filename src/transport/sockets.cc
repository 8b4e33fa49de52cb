#include "transport/sockets.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace humus::transport {

int SocketRegistry::fd_for(int port) const {
  const auto it = by_port_.find(port);
  return it == by_port_.end() ? -1 : it->second;
}

bool SocketRegistry::known_http1(int port) const {
  const auto it = known_.find(port);
  return it != known_.end() && !it->second.http2;
}

bool SocketRegistry::known_http2(int port) const {
  const auto it = known_.find(port);
  return it != known_.end() && it->second.http2;
}

bool SocketRegistry::retired(int port) const {
  const auto it = known_.find(port);
  return it != known_.end() && it->second.retired;
}

bool SocketRegistry::aged(int port, std::chrono::steady_clock::duration lifetime,
                          std::chrono::steady_clock::time_point now) const {
  const auto it = born_.find(port);
  return it != born_.end() && now - it->second >= lifetime;
}

void SocketRegistry::closed(int fd) {
  if (on_close_) on_close_(fd);
  if (connected_.erase(fd) != 0) {
    char byte = 0;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      ended_by_peer_.insert(fd);
    } else {
      ended_by_peer_.erase(fd);
    }
  }
  for (auto it = by_port_.begin(); it != by_port_.end(); ++it) {
    if (it->second == fd) {
      known_.erase(it->first);
      born_.erase(it->first);
      by_port_.erase(it);
      return;
    }
  }
}

bool has_unread_input(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && p.revents != 0;
}

void poison(int fd) {
  char sink[4096];
  // Bounded: a peer streaming garbage cannot keep this thread here.
  for (int i = 0; i < 64 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
  }
  ::shutdown(fd, SHUT_RDWR);
}

bool is_local_shortage(int e) {
  return e == EMFILE || e == ENFILE || e == EADDRNOTAVAIL || e == ENOBUFS || e == ENOMEM;
}

}  // namespace humus::transport
