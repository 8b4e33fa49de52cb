#include "support/stream_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace humus::test {
namespace {

constexpr size_t kBlock = size_t{1} << 20;  // the pattern repeats every 1 MiB + 13 bytes (a prime-ish period)
constexpr size_t kPeriod = kBlock + 13;

const std::vector<uint8_t>& pattern_block() {
  static const std::vector<uint8_t> block = [] {
    std::vector<uint8_t> b(kPeriod);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < kPeriod; ++i) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      b[i] = static_cast<uint8_t>(x);
    }
    return b;
  }();
  return block;
}

bool send_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Buffered reading of one connection.
class Conn {
 public:
  explicit Conn(int fd) : fd_(fd) {}
  // The header block up to and without the blank line; false at EOF.
  bool head(std::string& out) {
    for (;;) {
      const size_t end = buf_.find("\r\n\r\n", at_);
      if (end != std::string::npos) {
        out = buf_.substr(at_, end - at_);
        at_ = end + 4;
        return true;
      }
      if (!fill()) return false;
    }
  }
  // Up to `n` body bytes into the checksum; false at EOF.
  bool body(uint64_t n, Checksum& sum) {
    while (n > 0) {
      if (at_ == buf_.size() && !fill()) return false;
      const size_t k = static_cast<size_t>(std::min<uint64_t>(n, buf_.size() - at_));
      sum.update(reinterpret_cast<const uint8_t*>(buf_.data() + at_), k);
      at_ += k;
      n -= k;
    }
    return true;
  }
  bool line(std::string& out) {
    for (;;) {
      const size_t end = buf_.find("\r\n", at_);
      if (end != std::string::npos) {
        out = buf_.substr(at_, end - at_);
        at_ = end + 2;
        return true;
      }
      if (!fill()) return false;
    }
  }

 private:
  bool fill() {
    if (at_ > 0 && at_ == buf_.size()) {
      buf_.clear();
      at_ = 0;
    } else if (at_ > (1u << 20)) {
      buf_.erase(0, at_);
      at_ = 0;
    }
    char tmp[256 * 1024];
    const ssize_t k = ::recv(fd_, tmp, sizeof tmp, 0);
    if (k <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(k));
    return true;
  }
  int fd_;
  std::string buf_;
  size_t at_ = 0;
};

std::string header_value(const std::string& head, std::string_view name) {
  size_t pos = 0;
  while ((pos = head.find("\r\n", pos)) != std::string::npos) {
    pos += 2;
    const size_t colon = head.find(':', pos);
    const size_t eol = head.find("\r\n", pos);
    if (colon == std::string::npos || (eol != std::string::npos && colon > eol)) continue;
    std::string key = head.substr(pos, colon - pos);
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    if (key == name) {
      std::string v = head.substr(colon + 1, (eol == std::string::npos ? head.size() : eol) - colon - 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      return v;
    }
  }
  return {};
}

}  // namespace

void pattern_fill(uint64_t offset, uint8_t* out, size_t n) {
  const std::vector<uint8_t>& block = pattern_block();
  size_t at = static_cast<size_t>(offset % kPeriod);
  while (n > 0) {
    const size_t k = std::min(n, kPeriod - at);
    std::memcpy(out, block.data() + at, k);
    out += k;
    n -= k;
    at = 0;
  }
}

void Checksum::update(const uint8_t* data, size_t n) {
  bytes_ += n;
  while (n > 0 && in_word_ != 0) {
    word_ |= uint64_t{*data++} << (8 * in_word_);
    --n;
    if (++in_word_ == 8) {
      h_ = (h_ ^ word_) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
      word_ = 0;
      in_word_ = 0;
    }
  }
  while (n >= 8) {
    uint64_t w = 0;
    std::memcpy(&w, data, 8);
    h_ = (h_ ^ w) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
    data += 8;
    n -= 8;
  }
  while (n > 0) {
    word_ |= uint64_t{*data++} << (8 * in_word_);
    ++in_word_;
    --n;
  }
}

uint64_t Checksum::value() const {
  return in_word_ == 0 ? h_ ^ bytes_ : ((h_ ^ word_) * 0x100000001b3ULL) ^ bytes_;
}

uint64_t pattern_checksum(uint64_t n) {
  Checksum sum;
  std::vector<uint8_t> piece(kBlock);
  for (uint64_t at = 0; at < n;) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(kBlock, n - at));
    pattern_fill(at, piece.data(), k);
    sum.update(piece.data(), k);
    at += k;
  }
  return sum.value();
}

StreamPeer::StreamPeer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("stream peer: socket failed");
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error("stream peer: bind/listen failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

StreamPeer::~StreamPeer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (std::thread& t : workers) t.join();
}

std::string StreamPeer::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
std::string StreamPeer::url(std::string_view path) const { return base_url() + std::string(path); }

std::vector<StreamPeer::Record> StreamPeer::records() {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

size_t StreamPeer::count(std::string_view path) {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count_if(records_.begin(), records_.end(), [&](const Record& r) { return r.path == path; }));
}

void StreamPeer::record(Record r) {
  std::lock_guard<std::mutex> lock(mu_);
  records_.push_back(std::move(r));
}

void StreamPeer::accept_loop() {
  while (!stopping_) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.push_back(fd);
    workers_.emplace_back([this, fd] { serve(fd); });
  }
}

void StreamPeer::serve(int fd) {
  Conn conn(fd);
  std::string head;
  std::vector<uint8_t> block(256 * 1024);
  bool reset = false;
  while (!stopping_ && conn.head(head)) {
    Record rec;
    const size_t sp1 = head.find(' ');
    const size_t sp2 = head.find(' ', sp1 + 1);
    rec.method = head.substr(0, sp1);
    rec.path = head.substr(sp1 + 1, sp2 - sp1 - 1);
    Checksum sum;
    const std::string te = header_value(head, "transfer-encoding");
    const std::string cl = header_value(head, "content-length");
    bool ok = true;
    if (te.find("chunked") != std::string::npos) {
      rec.chunked = true;
      for (std::string line; ok;) {
        ok = conn.line(line);
        if (!ok) break;
        const uint64_t size = std::stoull(line, nullptr, 16);
        if (size == 0) {
          ok = conn.line(line);  // no trailers
          break;
        }
        ok = conn.body(size, sum) && conn.line(line);
      }
    } else if (!cl.empty()) {
      ok = conn.body(std::stoull(cl), sum);
    }
    if (!ok) break;
    rec.body_bytes = sum.bytes();
    rec.body_checksum = sum.value();
    const std::string path = rec.path;
    record(rec);

    const bool resets = path.rfind("/reset/", 0) == 0;
    const bool cuts = path.rfind("/cut/", 0) == 0;
    const bool lates = path.rfind("/late/", 0) == 0;
    if (path.rfind("/bytes/", 0) == 0 || resets || cuts || lates) {
      const std::string spec = path.substr(path.find('/', 1) + 1);
      const uint64_t n = std::stoull(spec);
      const uint64_t second = spec.find('/') == std::string::npos ? 0 : std::stoull(spec.substr(spec.find('/') + 1));
      // What goes on the wire: a cut body stops short of its length, a late one runs past it.
      const uint64_t cut = resets || cuts ? second : lates ? n + second : n;
      const std::string h = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                            std::to_string(n) + "\r\n\r\n";
      if (!send_all(fd, h.data(), h.size())) break;
      bool sent = true;
      for (uint64_t at = 0; at < cut && sent;) {
        const size_t k = static_cast<size_t>(std::min<uint64_t>(block.size(), cut - at));
        pattern_fill(at, block.data(), k);
        sent = send_all(fd, block.data(), k);
        at += k;
      }
      if (!sent) break;
      if (resets) {
        ::usleep(50 * 1000);  // what was written reaches the client before the RST
        linger lg{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        reset = true;
        break;
      }
      if (cuts) break;  // a clean close after what was sent
      // A late body's surplus stays on a connection kept open: the next request on it would read it as its
      // answer.
    } else {
      int code = 200;
      std::string body;
      if (path.rfind("/status/", 0) == 0) {
        code = std::stoi(path.substr(8));
      } else {
        body = std::to_string(rec.body_bytes) + " " + std::to_string(rec.body_checksum);
      }
      const std::string h = "HTTP/1.1 " + std::to_string(code) + " X\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
      if (!send_all(fd, h.data(), h.size())) break;
    }
  }
  (void)reset;
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
  }
  ::close(fd);
}

}  // namespace humus::test
