// The sockets of one connection cache (a lane's, or a client's asynchronous multi handle): libcurl opens
// and closes them through these callbacks, so the transport knows each connection's socket, can tell a local
// shortage from a refused connection (docs/transport.md §10.7), and can look at a pooled connection right
// before a request goes out on it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace humus::transport {

// Not thread-safe: one cache is driven by one thread at a time (a lane by the caller holding it, the
// asynchronous multi by the loop thread).
class SocketRegistry {
 public:
  // A connection went up on `fd`, bound to local port `port`.
  void bind(int port, int fd) {
    by_port_[port] = fd;
    connected_.insert(fd);
    ended_by_peer_.erase(fd);
  }
  // Whether `fd` is the socket of a connection that went up and is not closed yet.
  bool connected(int fd) const { return connected_.count(fd) != 0; }
  // The socket of the connection on local port `port`, or -1 when none is known.
  int fd_for(int port) const;
  // The protocol an answer came in over the connection on local port `port`: known once one has.
  void mark_protocol(int port, bool http2) { known_[port].http2 = http2; }
  bool known_http1(int port) const;
  bool known_http2(int port) const;
  // The connection on local port `port` takes no further request: an answer on it was framed in a way that
  // leaves its end in doubt, found while its body may still be read. The next request that would reuse it
  // closes it instead (on_prereq).
  void retire(int port) { known_[port].retired = true; }
  bool retired(int port) const;
  // The connection on local port `port` went up at `at` (its first request's send): from then on its age is
  // known, for max_connection_lifetime (docs/transport.md §10.1).
  void mark_born(int port, std::chrono::steady_clock::time_point at) { born_[port] = at; }
  // Whether the connection on local port `port` is known to be `lifetime` old or older at `now`.
  bool aged(int port, std::chrono::steady_clock::duration lifetime, std::chrono::steady_clock::time_point now) const;
  // How many transfers the cache is driving now (a lane: always one): a connection may be replaced under a
  // transfer only when no other transfer could be using it.
  void set_transfers(size_t n) { transfers_ = n; }
  size_t transfers() const { return transfers_; }
  // libcurl closes `fd` (it is still open): the listener, if any, hears of it first. Whether the peer had
  // ended the connection by then (an EOF or an error waiting on the socket) is kept until `fd` is bound again.
  void closed(int fd);
  bool ended_by_peer(int fd) const { return ended_by_peer_.count(fd) != 0; }
  // Who must forget a socket before its number can be given to another (the asynchronous multi's epoll).
  void on_close(std::function<void(int fd)> listener) { on_close_ = std::move(listener); }

 private:
  std::unordered_map<int, int> by_port_;  // local port → socket
  struct Known {
    bool http2 = false;  // answered over HTTP/2 (false: HTTP/1.x)
    bool retired = false;
  };
  std::unordered_map<int, Known> known_;  // local port → what its answers told
  std::unordered_set<int> connected_;     // the sockets in by_port_
  std::unordered_map<int, std::chrono::steady_clock::time_point> born_;  // local port → when it went up
  std::unordered_set<int> ended_by_peer_; // closed sockets whose peer had ended the connection (closed())
  std::function<void(int)> on_close_;
  size_t transfers_ = 0;
};

// Whether bytes (or an end of stream, or an error) wait unread on an idle connection's socket. An idle
// HTTP/1.1 connection must have nothing to read: late bytes are a broken or hostile peer's, and would be
// read as the next request's response (docs/libcurl-traps.md §19).
bool has_unread_input(int fd);

// Makes libcurl see the connection as dead the next time it looks (it then closes it): what is pending is
// read and dropped, and the socket is shut down both ways.
void poison(int fd);

// Whether errno `e` is a local shortage rather than the network's or the peer's answer.
bool is_local_shortage(int e);

}  // namespace humus::transport
