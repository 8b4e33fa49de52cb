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

void SocketRegistry::closed(int fd) {
  if (on_close_) on_close_(fd);
  connected_.erase(fd);
  for (auto it = by_port_.begin(); it != by_port_.end(); ++it) {
    if (it->second == fd) {
      known_.erase(it->first);
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
