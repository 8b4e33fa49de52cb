#pragma once

// A small HTTP/1.1 peer for bodies too large for the Python test server to serve quickly (GiB downloads and
// uploads) and for exact mid-body resets. Loopback, port 0, one thread per connection, keep-alive.
//
//   GET  /bytes/N        200, Content-Length N, N bytes of the pattern (pattern_fill)
//   GET  /reset/N/M      200, Content-Length N, M bytes of the pattern, then a TCP RST
//   GET  /cut/N/M        200, Content-Length N, M bytes of the pattern, then a clean close (FIN): a body cut
//   short GET  /late/N/X       200, Content-Length N, N + X bytes of the pattern, the connection kept open: X
//   bytes the
//                        length did not announce, left where the next answer on that connection would start
//   ANY  /upload         reads the body (Content-Length or chunked), answers 200 "BYTES CHECKSUM"
//   ANY  /status/CODE    reads the body, answers CODE with an empty body
//
// Every request is recorded (method, path, body bytes and checksum).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace humus::test {

// The pattern byte at every offset of a body, filled from `offset` on.
void pattern_fill(uint64_t offset, uint8_t* out, size_t n);

// A position-sensitive checksum of a byte stream fed in pieces of any size.
class Checksum {
 public:
  void update(const uint8_t* data, size_t n);
  uint64_t value() const;  // of everything fed so far
  uint64_t bytes() const { return bytes_; }

 private:
  uint64_t h_ = 0x6a09e667f3bcc908ULL;
  uint64_t word_ = 0;
  unsigned in_word_ = 0;
  uint64_t bytes_ = 0;
};

// The checksum of the first `n` pattern bytes.
uint64_t pattern_checksum(uint64_t n);

class StreamPeer {
 public:
  struct Record {
    std::string method;
    std::string path;
    uint64_t body_bytes = 0;
    uint64_t body_checksum = 0;
    bool chunked = false;
  };

  StreamPeer();  // listening once constructed; throws std::runtime_error when it cannot
  ~StreamPeer();
  StreamPeer(const StreamPeer&) = delete;
  StreamPeer& operator=(const StreamPeer&) = delete;

  int port() const { return port_; }
  std::string base_url() const;                 // "http://127.0.0.1:PORT"
  std::string url(std::string_view path) const;  // base_url() + path
  std::vector<Record> records();
  size_t count(std::string_view path);

 private:
  void accept_loop();
  void serve(int fd);
  void record(Record r);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;  // guarded by mu_
  std::vector<int> open_fds_;         // guarded by mu_: shut down on destruction
  std::vector<Record> records_;       // guarded by mu_
};

}  // namespace humus::test
