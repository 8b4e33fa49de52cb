// The runtime's event loop: what drives every asynchronous call — sockets (epoll, for libcurl's multi
// handles), timers (attempt deadlines, retry waits, bulkhead waits) and tasks posted from other threads.
// By default it is one thread of its own. On a virtual clock that thread sleeps on the clock instead of in
// epoll, so asynchronous calls against the mock transport run on virtual time like blocking ones
// (docs/testing-kit.md §16.1). Driven by its caller (a runtime's "loop": "caller", docs/bindings.md §17.1)
// it has no thread: a binding watches dup_fd() on its own poller and calls run_ready() when it is readable
// or the returned time comes, so no thread of the library sits between the binding and its sockets.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/stepped_clock.h"
#include "transport/free_on_loop.h"
#include "transport/timer_heap.h"

namespace humus::transport {

class EventLoop {
 public:
  using Task = std::function<void()>;
  using TimerId = TimerHeap::Id;

  class SocketHandler {
   public:
    virtual ~SocketHandler() = default;
    // `events`: EPOLLIN / EPOLLOUT / EPOLLERR / EPOLLHUP bits that are ready.
    virtual void on_socket(int fd, uint32_t events) = 0;
  };

  enum class Driver { kOwnThread, kCaller };

  // `stepped_clock` non-null (the virtual clock): time comes from it and there are no sockets (then `driver`
  // must be kOwnThread).
  EventLoop(Clock& clock, SteppedClock* stepped_clock, Driver driver = Driver::kOwnThread);
  // Stops and joins the thread (caller-driven: waits for a run_ready() in progress). Tasks still queued are
  // run first, on that thread; timers are dropped.
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs `task` on the loop thread, after the tasks posted before it. Any thread.
  void post(Task task);
  // The loop's own thread, or the thread inside run_ready() / drive_until() of a caller-driven loop.
  bool on_loop_thread() const {
    return std::this_thread::get_id() == thread_id_.load(std::memory_order_relaxed);
  }
  Clock& clock() { return clock_; }
  bool caller_driven() const { return driver_ == Driver::kCaller; }
  // Where memory this loop's thread allocated for another thread is given back to be freed (free_on_loop.h).
  // Null on a virtual clock, whose loop is woken for no task the test did not cause.
  const std::shared_ptr<FreeOnLoop>& free_on_loop() const { return free_on_loop_; }

  // Caller-driven loops only. Any thread.
  // A new descriptor for the loop's epoll set (nonblocking, close-on-exec; the caller closes it): readable
  // whenever a socket, a posted task or a wake-up waits. -1 with errno set when it cannot be made.
  int dup_fd() const;
  // Runs everything ready — tasks, due timers, ready sockets — until nothing is, and returns when the next
  // timer is due (Instant::max(): none; a time not after now: call again at once). One thread at a time:
  // a second caller waits for the first. Never blocks on I/O.
  Instant run_ready();
  // Returns once done() is true, running the loop on this thread while it waits (a wait for the loop's work
  // must not depend on the caller's driver getting a CPU). Not from inside run_ready().
  void drive_until(const std::function<bool()>& done);

  // In a forked child (docs/fork.md §23), instead of the destructor, which would join a thread the child does
  // not have: closes the child's copies of the loop's descriptors (the epoll set named by them is the
  // parent's, which the child must not change) and lets go of memory given back to it. The object is then
  // left as it is, never destroyed, with what its queue and timers held: the parent's calls, not the child's.
  void abandon_after_fork();

  // Loop thread only. A timer runs once, at or after `at`, unless cancelled first.
  TimerId add_timer(Instant at, Task task);
  void cancel_timer(TimerId id);

  // Loop thread only, real clock only: (re)registers `fd` for `events` (EPOLLIN | EPOLLOUT) with `handler`.
  void watch(int fd, uint32_t events, SocketHandler* handler);
  void unwatch(int fd);

 private:
  // The loop could not be made (no descriptor or thread left): a StatusError, kResource for a local shortage.
  [[noreturn]] static void throw_unavailable(const char* what, int error);
  void run();
  void run_tasks();
  void run_due_timers();
  void wait_for_work();
  // One epoll_wait of at most `timeout_ms`, its events dispatched; how many there were.
  int poll_sockets(int timeout_ms);
  int timeout_ms_until(Instant next) const;
  Instant run_ready_locked() REQUIRES(drive_mu_);
  void wake();

  Clock& clock_;
  SteppedClock* const stepped_clock_;
  const Driver driver_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;          // eventfd: post() wakes epoll_wait through it
  Signal wake_signal_;        // the same on the virtual clock

  Mutex mu_;
  std::vector<Task> tasks_ GUARDED_BY(mu_);
  std::vector<Task> spare_;   // the loop's: an empty queue, with capacity, for tasks_ to become next
  bool stopping_ GUARDED_BY(mu_) = false;

  // Loop thread only.
  TimerHeap timers_;
  std::unordered_map<int, SocketHandler*> sockets_;

  std::shared_ptr<FreeOnLoop> free_on_loop_;  // real clock only
  Mutex drive_mu_;       // caller-driven: held by the thread running the loop
  std::thread thread_;   // kOwnThread only
  std::atomic<std::thread::id> thread_id_{};
};

}  // namespace humus::transport
