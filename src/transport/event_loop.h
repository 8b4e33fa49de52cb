// The runtime's event loop: one thread that drives every asynchronous call — sockets (epoll, for libcurl's
// multi handles), timers (attempt deadlines, retry waits, bulkhead waits) and tasks posted from other
// threads. On a virtual clock it sleeps on that clock instead of in epoll, so asynchronous calls against
// the mock transport run on virtual time like blocking ones (docs/testing-kit.md §16.1).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "testing/virtual_clock.h"
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

  // `virtual_clock` non-null: time comes from it and there are no sockets.
  EventLoop(Clock& clock, testing::VirtualClock* virtual_clock);
  // Stops and joins the thread. Tasks still queued are run first; timers are dropped.
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs `task` on the loop thread, after the tasks posted before it. Any thread.
  void post(Task task);
  bool on_loop_thread() const { return std::this_thread::get_id() == thread_id_; }
  Clock& clock() { return clock_; }

  // Loop thread only. A timer runs once, at or after `at`, unless cancelled first.
  TimerId add_timer(Instant at, Task task);
  void cancel_timer(TimerId id);

  // Loop thread only, real clock only: (re)registers `fd` for `events` (EPOLLIN | EPOLLOUT) with `handler`.
  void watch(int fd, uint32_t events, SocketHandler* handler);
  void unwatch(int fd);

 private:
  void run();
  void run_tasks();
  void run_due_timers();
  void wait_for_work();
  void wake();

  Clock& clock_;
  testing::VirtualClock* const virtual_clock_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;          // eventfd: post() wakes epoll_wait through it
  Signal wake_signal_;        // the same on the virtual clock

  std::mutex mu_;
  std::vector<Task> tasks_;   // guarded by mu_
  bool stopping_ = false;     // guarded by mu_

  // Loop thread only.
  TimerHeap timers_;
  std::unordered_map<int, SocketHandler*> sockets_;

  std::thread thread_;
  std::thread::id thread_id_;
};

}  // namespace humus::transport
