// Time as the policies see it: an injected Clock, so every wait of the client can run on real time or on the
// virtual clock of testing/virtual_clock.h (docs/testing-kit.md §16.1) without the policies knowing which.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/mutex.h"

namespace humus {

using Duration = std::chrono::nanoseconds;
using Instant = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

// A wake-up a sleeper can receive from another thread. Level-triggered: notify() before the sleep starts is
// not lost. Thread-safe.
class Signal {
 public:
  void notify();
  bool notified() const;
  void reset();

  // For clocks: wait for notify() or until `pred` (checked under the signal's lock) holds, with a real-time
  // bound when `until` is set. Returns notified().
  template <typename Pred>
  bool wait(Pred pred, const Instant* until) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    while (!notified_ && !pred()) {
      if (until == nullptr) {
        cv_.wait(mu_);
      } else if (cv_.wait_until(mu_, *until) == std::cv_status::timeout) {
        break;  // timed out: notified_ still tells whether a notify() came as well
      }
    }
    return notified_;
  }

  // Wakes a waiter so it re-checks its predicate, without setting notified(). Used by the virtual clock.
  void poke();

 private:
  mutable Mutex mu_;
  CondVar cv_;
  bool notified_ GUARDED_BY(mu_) = false;
};

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time: what deadlines, windows and cool-downs are measured on.
  virtual Instant now() const = 0;
  // Calendar time: only for HTTP-dates (Retry-After).
  virtual WallTime wall_now() const = 0;
  // Sleeps until `deadline` or until `wake` is notified, whichever comes first. Returns true when woken by
  // the signal, false when the deadline passed. Thread-safe.
  virtual bool sleep_until(Instant deadline, Signal& wake) = 0;
};

// The process's steady and system clocks. Thread-safe; one shared instance is enough.
class RealClock final : public Clock {
 public:
  Instant now() const override { return std::chrono::steady_clock::now(); }
  WallTime wall_now() const override { return std::chrono::system_clock::now(); }
  bool sleep_until(Instant deadline, Signal& wake) override;

  static RealClock& instance();
};

}  // namespace humus
