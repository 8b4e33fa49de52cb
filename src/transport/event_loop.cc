#include "transport/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <stdexcept>

namespace humus::transport {

EventLoop::EventLoop(Clock& clock, testing::VirtualClock* virtual_clock)
    : clock_(clock), virtual_clock_(virtual_clock) {
  if (virtual_clock_ == nullptr) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) throw std::runtime_error("event loop: cannot create epoll/eventfd");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_fd_;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  }
  // thread_id_ is written under mu_, which run() takes before anything else: the loop thread sees it too.
  std::lock_guard<std::mutex> lock(mu_);
  thread_ = std::thread([this] { run(); });
  thread_id_ = thread_.get_id();
}

EventLoop::~EventLoop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake();
  thread_.join();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void EventLoop::post(Task task) {
  bool was_empty = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    was_empty = tasks_.empty();
    tasks_.push_back(std::move(task));
  }
  // Only the first task of a batch needs a wake-up: the loop drains the whole queue once awake.
  if (was_empty && !on_loop_thread()) wake();
}

void EventLoop::wake() {
  if (virtual_clock_ != nullptr) {
    wake_signal_.notify();
    return;
  }
  const uint64_t one = 1;
  // A full counter (never, in practice) still leaves the loop readable: the wake-up is not lost.
  [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof one);
}

EventLoop::TimerId EventLoop::add_timer(Instant at, Task task) { return timers_.add(at, std::move(task)); }

void EventLoop::cancel_timer(TimerId id) { timers_.cancel(id); }

void EventLoop::watch(int fd, uint32_t events, SocketHandler* handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  const bool known = sockets_.count(fd) != 0;
  sockets_[fd] = handler;
  if (epoll_ctl(epoll_fd_, known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0 && errno == ENOENT) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);  // the kernel forgot a closed-and-reused descriptor
  }
}

void EventLoop::unwatch(int fd) {
  if (sockets_.erase(fd) == 0) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);  // may fail if libcurl closed it already: harmless
}

void EventLoop::run() {
  { std::lock_guard<std::mutex> lock(mu_); }
  // On the virtual clock the loop is a participant: time must not jump while it works, only while it
  // sleeps on a timer.
  std::optional<testing::VirtualClock::Hold> busy;
  if (virtual_clock_ != nullptr) busy.emplace(*virtual_clock_);
  for (;;) {
    run_tasks();
    run_due_timers();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ && tasks_.empty()) return;
      if (!tasks_.empty()) continue;
    }
    if (virtual_clock_ != nullptr && timers_.empty()) {
      // Idle with nothing timed: not a participant until a task arrives.
      busy.reset();
      wake_signal_.wait([] { return false; }, nullptr);
      busy.emplace(*virtual_clock_);
      wake_signal_.reset();
      continue;
    }
    wait_for_work();
  }
}

void EventLoop::run_tasks() {
  std::vector<Task> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(tasks_);
  }
  for (Task& task : batch) task();
}

void EventLoop::run_due_timers() {
  const Instant now = clock_.now();
  while (Task task = timers_.pop_due(now)) task();
}

void EventLoop::wait_for_work() {
  const Instant next = timers_.next();
  if (virtual_clock_ != nullptr) {
    wake_signal_.reset();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!tasks_.empty() || stopping_) return;
    }
    virtual_clock_->sleep_until(next, wake_signal_);
    return;
  }
  int timeout_ms = -1;
  if (next != Instant::max()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - clock_.now()).count();
    timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
  }
  epoll_event events[64];
  const int n = epoll_wait(epoll_fd_, events, 64, timeout_ms);
  for (int i = 0; i < n; ++i) {
    const int fd = events[i].data.fd;
    if (fd == wake_fd_) {
      uint64_t drained = 0;
      [[maybe_unused]] const ssize_t r = read(wake_fd_, &drained, sizeof drained);
      continue;
    }
    auto it = sockets_.find(fd);
    if (it != sockets_.end()) it->second->on_socket(fd, events[i].events);
  }
}

}  // namespace humus::transport
