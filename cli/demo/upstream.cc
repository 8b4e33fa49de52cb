#include "demo/upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <system_error>
#include <vector>

namespace humus::cli::demo {
namespace {

constexpr size_t kMaxHeaderBytes = size_t{64} * 1024;

std::string response(int status, std::string_view reason, std::string_view extra_headers,
                     std::string_view body) {
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
  r += extra_headers;
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  r += body;
  return r;
}

bool send_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char a = static_cast<char>(std::tolower(static_cast<unsigned char>(line[i])));
    if (a != name[i]) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// What the head of one request says about framing: its body's length and whether the client closes.
struct Head {
  size_t content_length = 0;
  bool close = false;
  bool valid = true;
};

Head parse_head(std::string_view head) {
  Head h;
  size_t pos = head.find("\r\n");  // skip the request line
  if (pos == std::string_view::npos) return h;
  const std::string_view request_line = head.substr(0, pos);
  if (request_line.size() >= 8 && request_line.substr(request_line.size() - 8) == "HTTP/1.0") h.close = true;
  while (pos < head.size()) {
    const size_t start = pos + 2;
    size_t end = head.find("\r\n", start);
    if (end == std::string_view::npos) end = head.size();
    const std::string_view line = head.substr(start, end - start);
    pos = end;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals_prefix(line, "content-length:")) {
      size_t n = 0;
      for (char ch : value) {
        if (ch < '0' || ch > '9' || n > (1u << 30)) {
          h.valid = false;
          return h;
        }
        n = n * 10 + static_cast<size_t>(ch - '0');
      }
      h.content_length = n;
    } else if (iequals_prefix(line, "connection:") && iequals_prefix(value, "close")) {
      h.close = true;
    } else if (iequals_prefix(line, "transfer-encoding:")) {
      h.valid = false;  // the demo's client never sends a chunked body
    }
  }
  return h;
}

}  // namespace

Upstream::Upstream(Schedule schedule, std::chrono::milliseconds slow_delay)
    : schedule_(schedule), slow_delay_(slow_delay) {}

Upstream::~Upstream() { stop(); }

bool Upstream::start(std::chrono::steady_clock::time_point epoch, std::string& why) {
  epoch_ = epoch;
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) {
    const int error = errno;
    why = std::string("socket: ") + std::generic_category().message(error);
    return false;
  }
  const int one = 1;
  (void)::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 512) != 0) {
    const int error = errno;
    why = std::string("bind/listen on 127.0.0.1: ") + std::generic_category().message(error);
    return false;
  }
  socklen_t len = sizeof addr;
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int error = errno;
    why = std::string("getsockname: ") + std::generic_category().message(error);
    return false;
  }
  port_ = ntohs(addr.sin_port);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    const int error = errno;
    why = std::string("eventfd: ") + std::generic_category().message(error);
    return false;
  }
  acceptor_ = std::thread(&Upstream::accept_loop, this);
  return true;
}

void Upstream::stop() {
  if (stopping_.exchange(true, std::memory_order_relaxed)) return;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Connection& c : connections_) {
      if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);  // wakes its thread, which closes it
      threads.push_back(std::move(c.thread));
    }
  }
  for (std::thread& t : threads) {
    if (t.joinable()) t.join();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    connections_.clear();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

Upstream::Counts Upstream::counts() const {
  Counts c;
  c.requests = requests_.load(std::memory_order_relaxed);
  c.ok = ok_.load(std::memory_order_relaxed);
  c.delayed = delayed_.load(std::memory_order_relaxed);
  c.unavailable = unavailable_.load(std::memory_order_relaxed);
  c.resets = resets_.load(std::memory_order_relaxed);
  return c;
}

Phase Upstream::phase_now() const {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - epoch_);
  return schedule_.at(ms.count());
}

void Upstream::reap_finished() {
  std::vector<std::thread> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (it->finished) {
        done.push_back(std::move(it->thread));
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (std::thread& t : done) t.join();
}

void Upstream::accept_loop() {
  while (!stopping_.load(std::memory_order_relaxed)) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    const int n = ::poll(fds, 2, 200);
    reap_finished();
    if (n <= 0 || (fds[1].revents & POLLIN) != 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    Connection& c = connections_.emplace_back();
    c.fd = fd;
    c.thread = std::thread(&Upstream::serve, this, &c);
  }
}

void Upstream::close_connection(Connection* c, bool reset) {
  std::lock_guard<std::mutex> lock(mu_);
  if (c->fd >= 0) {
    if (reset) {
      const linger abort_on_close{1, 0};  // close() then sends RST instead of FIN
      (void)::setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
    }
    ::close(c->fd);
    c->fd = -1;
  }
  c->finished = true;
}

bool Upstream::wait_or_gone(int fd, std::chrono::milliseconds delay) {
  const auto until = std::chrono::steady_clock::now() + delay;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return true;
    pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (stopping_.load(std::memory_order_relaxed) || (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0)
      return false;
    char probe = 0;
    const ssize_t got = ::recv(fd, &probe, 1, MSG_PEEK | MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return false;
    // Bytes of a next request already sent: keep them, and wait the rest out without polling.
    std::this_thread::sleep_until(until);
    return true;
  }
}

void Upstream::serve(Connection* c) {
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fd = c->fd;
  }
  static const std::string ok_answer =
      response(200, "OK", "Content-Type: application/json\r\n", "{\"ok\":true}\n");
  static const std::string unavailable_answer =
      response(503, "Service Unavailable", "Retry-After: 1\r\nContent-Type: text/plain\r\n", "unavailable\n");
  std::string buf;
  char chunk[8192];
  const auto fill = [&](size_t want) {  // reads until buf holds `want` bytes
    while (buf.size() < want) {
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buf.append(chunk, static_cast<size_t>(n));
    }
    return true;
  };
  while (!stopping_.load(std::memory_order_relaxed)) {
    size_t head_end = 0;
    while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (buf.size() > kMaxHeaderBytes || !fill(buf.size() + 1)) return close_connection(c, false);
    }
    const Head head = parse_head(std::string_view(buf).substr(0, head_end));
    if (!head.valid) return close_connection(c, false);
    const size_t request_size = head_end + 4 + head.content_length;
    if (!fill(request_size)) return close_connection(c, false);
    buf.erase(0, request_size);

    const uint64_t n = requests_.fetch_add(1, std::memory_order_relaxed);
    const std::string* answer = &ok_answer;
    switch (phase_now()) {
      case Phase::kHealthy:
      case Phase::kRecovering:
        break;
      case Phase::kSlow:
        if (n % 4 == 0) delayed_.fetch_add(1, std::memory_order_relaxed);
        if (!wait_or_gone(fd, n % 4 == 0 ? slow_delay_ : std::chrono::milliseconds(10))) {
          return close_connection(c, false);
        }
        break;
      case Phase::kFailing:
        if (n % 4 == 3) {
          resets_.fetch_add(1, std::memory_order_relaxed);
          return close_connection(c, true);
        }
        answer = &unavailable_answer;
        break;
    }
    (answer == &ok_answer ? ok_ : unavailable_).fetch_add(1, std::memory_order_relaxed);
    if (!send_all(fd, *answer) || head.close) return close_connection(c, false);
  }
  close_connection(c, false);
}

}  // namespace humus::cli::demo
