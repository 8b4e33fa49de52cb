#pragma once

// A raw TCP peer on loopback that misbehaves on purpose: each accepted connection is handed to a handler
// that reads requests and writes whatever bytes the test wants — a header block cut short, late bytes after
// a complete response, an HTTP/0.9 reply, megabytes of headers, a reset in the middle of a TLS handshake.
// The peer counts connections and request heads itself, so a test checks what reached the wire.
//
//   humus::test::RawPeer peer([](humus::test::RawConnection& c) {
//     while (c.read_request()) c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
//   });
//   ... call http://127.0.0.1:<peer.port()>/ ...
//   EXPECT_EQ(peer.requests(), 1);

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace humus::test {

class RawConnection {
 public:
  explicit RawConnection(int fd, std::atomic<int>& requests) : fd_(fd), requests_(requests) {}

  // Reads one request: its head, then a Content-Length body or a chunked one. False at EOF or an error.
  // `head` (may be null) gets the head's text.
  bool read_request(std::string* head = nullptr);
  // Reads whatever arrives within `ms` (at most `max` bytes): a TLS ClientHello, say.
  std::string read_some(int ms, size_t max = 65536);
  void write(std::string_view bytes);
  // Closes with a TCP RST (SO_LINGER 0) instead of a FIN.
  void reset();
  int fd() const { return fd_; }

 private:
  bool fill(int timeout_ms);

  int fd_;
  std::atomic<int>& requests_;
  std::string buffer_;  // read but not yet consumed
};

class RawPeer {
 public:
  using Handler = std::function<void(RawConnection&)>;

  // Listens on 127.0.0.1, an ephemeral port; each connection runs `handler` on a thread of its own and is
  // closed (FIN) when the handler returns.
  explicit RawPeer(Handler handler);
  // Stops accepting, shuts every connection down and joins the threads.
  ~RawPeer();
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;

  int port() const { return port_; }
  std::string url(std::string_view path = "/") const;
  int connections() const { return connections_.load(); }
  int requests() const { return requests_.load(); }

 private:
  void accept_loop();

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::vector<int> open_fds_;  // guarded by mu_
  std::vector<std::thread> threads_;  // guarded by mu_
  std::thread acceptor_;
};

}  // namespace humus::test
