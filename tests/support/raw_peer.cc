#include "support/raw_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace humus::test {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

bool RawConnection::fill(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return false;
  char chunk[16384];
  const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
  if (n <= 0) return false;
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

bool RawConnection::read_request(std::string* head) {
  size_t end;
  while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(10'000)) return false;
  }
  std::string text = buffer_.substr(0, end + 4);
  buffer_.erase(0, end + 4);
  const std::string lowered = lower(text);
  if (const size_t cl = lowered.find("\r\ncontent-length:"); cl != std::string::npos) {
    const size_t length = std::stoul(lowered.substr(cl + 17));
    while (buffer_.size() < length) {
      if (!fill(10'000)) return false;
    }
    buffer_.erase(0, length);
  } else if (lowered.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
    while (buffer_.find("\r\n0\r\n\r\n") == std::string::npos && !buffer_.starts_with("0\r\n\r\n")) {
      if (!fill(10'000)) return false;
    }
    buffer_.erase(0, buffer_.find("0\r\n\r\n") + 5);
  }
  ++requests_;
  if (head != nullptr) *head = std::move(text);
  return true;
}

std::string RawConnection::read_some(int ms, size_t max) {
  if (buffer_.empty()) fill(ms);
  std::string out = buffer_.substr(0, max);
  buffer_.erase(0, out.size());
  return out;
}

void RawConnection::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void RawConnection::reset() {
  linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::shutdown(fd_, SHUT_RDWR);
}

RawPeer::RawPeer(Handler handler) : handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0) {
    throw std::runtime_error("raw peer: cannot listen on loopback");
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

RawPeer::~RawPeer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

std::string RawPeer::url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

void RawPeer::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++connections_;
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.push_back(fd);
    threads_.emplace_back([this, fd] {
      RawConnection c(fd, requests_);
      handler_(c);
      {
        std::lock_guard<std::mutex> inner(mu_);
        std::erase(open_fds_, fd);
      }
      ::close(fd);
    });
  }
}

}  // namespace humus::test
