#include "transport/event_loop.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "common/status.h"
#include "transport/sockets.h"

namespace humus::transport {

EventLoop::EventLoop(Clock& clock, SteppedClock* stepped_clock, Driver driver)
    : clock_(clock),
      stepped_clock_(stepped_clock),
      driver_(stepped_clock == nullptr ? driver : Driver::kOwnThread) {
  if (stepped_clock_ == nullptr) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    int failed = epoll_fd_ < 0 ? errno : 0;
    if (failed == 0) {
      wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      failed = wake_fd_ < 0 ? errno : 0;
    }
    if (failed != 0) {
      if (epoll_fd_ >= 0) close(epoll_fd_);
      throw_unavailable("could not make its epoll or eventfd descriptor", failed);
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_fd_;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
    free_on_loop_ = FreeOnLoop::make(*this);
  }
  if (driver_ == Driver::kCaller) return;
  // thread_id_ is written under mu_, which run() takes before anything else: the loop thread sees it too.
  MutexLock lock(mu_);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    free_on_loop_->detach();
    free_on_loop_.reset();
    close(epoll_fd_);
    close(wake_fd_);
    throw_unavailable("could not start its thread", e.code().value());
  }
  thread_id_ = thread_.get_id();
}

void EventLoop::throw_unavailable(const char* what, int error) {
  // Out of descriptors, memory or threads is the machine's state, not the dependency's (docs/transport.md
  // §10.7): HUMUS_E_RESOURCE, and the next call makes the loop again.
  throw StatusError(Status(is_local_shortage(error) || error == EAGAIN ? Code::kResource : Code::kInternal,
                           std::string("a local shortage: the event loop ") + what + " (" + std::strerror(error) +
                               "): not the dependency's fault"));
}

EventLoop::~EventLoop() {
  // First: nothing is given back to a loop that is going, and what waits is freed here.
  if (free_on_loop_) free_on_loop_->detach();
  if (driver_ == Driver::kCaller) {
    MutexLock driving(drive_mu_);
    thread_id_ = std::this_thread::get_id();
    for (;;) {
      {
        MutexLock lock(mu_);
        if (tasks_.empty()) break;
      }
      run_tasks();
    }
  } else {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    wake();
    thread_.join();
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void EventLoop::abandon_after_fork() {
  // free_on_loop_'s own lock is held for a few instructions at a time; what waits there is the parent's
  // memory, freed here instead (FreeOnLoop::detach), and give_back refuses from now on.
  if (free_on_loop_) free_on_loop_->detach();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  epoll_fd_ = -1;
  wake_fd_ = -1;  // a task posted to it now wakes nobody (write fails with EBADF) and is never run
}

void EventLoop::post(Task task) {
  bool was_empty = false;
  {
    MutexLock lock(mu_);
    was_empty = tasks_.empty();
    tasks_.push_back(std::move(task));
  }
  // Only the first task of a batch needs a wake-up: the loop drains the whole queue once awake.
  if (was_empty && !on_loop_thread()) wake();
}

void EventLoop::wake() {
  if (stepped_clock_ != nullptr) {
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
  { MutexLock lock(mu_); }
  // On the virtual clock the loop is a participant: time must not jump while it works, only while it
  // sleeps on a timer.
  std::optional<SteppedClock::Busy> busy;
  if (stepped_clock_ != nullptr) busy.emplace(*stepped_clock_);
  for (;;) {
    run_tasks();
    run_due_timers();
    {
      MutexLock lock(mu_);
      if (stopping_ && tasks_.empty()) return;
      if (!tasks_.empty()) continue;
    }
    if (stepped_clock_ != nullptr && timers_.empty()) {
      // Idle with nothing timed: not a participant until a task arrives.
      busy.reset();
      wake_signal_.wait([] { return false; }, nullptr);
      busy.emplace(*stepped_clock_);
      wake_signal_.reset();
      continue;
    }
    wait_for_work();
  }
}

void EventLoop::run_tasks() {
  // Two queues that change places: the one just run comes back empty with its capacity, so once both have
  // grown nobody allocates one. Taken and dropped here, it was freed on this thread and grown again on the
  // posters' at every batch (free_on_loop.h says why that costs more than it seems). One grown past a
  // burst's size is let go, so a burst does not hold its memory for good.
  constexpr size_t kKeptCapacity = 1024;
  std::vector<Task> batch = std::move(spare_);
  {
    MutexLock lock(mu_);
    batch.swap(tasks_);
  }
  for (Task& task : batch) task();
  batch.clear();
  if (batch.capacity() <= kKeptCapacity) spare_ = std::move(batch);
}

void EventLoop::run_due_timers() {
  const Instant now = clock_.now();
  while (Task task = timers_.pop_due(now)) task();
}

int EventLoop::dup_fd() const {
  const int fd = fcntl(epoll_fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

Instant EventLoop::run_ready() {
  MutexLock driving(drive_mu_);
  return run_ready_locked();
}

Instant EventLoop::run_ready_locked() {
  thread_id_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  // Bounded, so a peer that keeps a socket busy cannot keep the caller's thread here for ever; with work
  // left the answer is "now" and the caller comes back at once.
  bool more = true;
  for (int round = 0; round < 16 && more; ++round) {
    run_tasks();
    run_due_timers();
    // Until epoll finds nothing: a socket still readable after its handler ran is reported again by this
    // (level-triggered) set, but would not wake a caller that watches the set's descriptor edge-triggered.
    more = poll_sockets(0) > 0;
    MutexLock lock(mu_);
    more = more || !tasks_.empty();
  }
  thread_id_.store(std::thread::id(), std::memory_order_relaxed);
  return more ? Instant::min() : timers_.next();
}

void EventLoop::drive_until(const std::function<bool()>& done) {
  // The timers this thread's runs set are not in the deadline the usual driver sleeps to: wake it on the way
  // out, so it asks for the next timer again.
  struct WakeOnReturn {
    EventLoop& loop;
    ~WakeOnReturn() { loop.wake(); }
  } wake_driver{*this};
  while (!done()) {
    Instant next;
    {
      MutexLock driving(drive_mu_);
      next = run_ready_locked();
    }
    if (done()) return;
    // Another thread may meet the condition without touching the loop (a driver that just ran the task this
    // waits for): look again every millisecond.
    const int until_timer = timeout_ms_until(next);
    pollfd ready{epoll_fd_, POLLIN, 0};
    poll(&ready, 1, until_timer < 0 ? 1 : std::min(until_timer, 1));
  }
}

int EventLoop::timeout_ms_until(Instant next) const {
  if (next == Instant::max()) return -1;
  const Instant now = clock_.now();
  if (next <= now) return 0;  // before subtracting: Instant::min() - now overflows
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

void EventLoop::wait_for_work() {
  const Instant next = timers_.next();
  if (stepped_clock_ != nullptr) {
    wake_signal_.reset();
    {
      MutexLock lock(mu_);
      if (!tasks_.empty() || stopping_) return;
    }
    stepped_clock_->sleep_until(next, wake_signal_);
    return;
  }
  poll_sockets(timeout_ms_until(next));
}

int EventLoop::poll_sockets(int timeout_ms) {
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
  return n;
}

}  // namespace humus::transport
