// The virtual clock (docs/testing-kit.md §16.1): time moves only when a test advances it, or, with auto-advance on, when
// every participant is asleep on a timer, so a test of a 2 s Retry-After or a 10 s cool-down costs no real
// time. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <list>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/stepped_clock.h"

namespace humus::testing {

class VirtualClock final : public SteppedClock {
 public:
  // Starts at an arbitrary monotonic instant and at the calendar time `wall_start`.
  explicit VirtualClock(WallTime wall_start = WallTime(std::chrono::seconds(1767225600)));  // 2026-01-01Z
  ~VirtualClock() override;

  Instant now() const override;
  WallTime wall_now() const override;
  bool sleep_until(Instant deadline, Signal& wake) override;

  // Moves time forward and wakes every sleeper whose deadline has come. A negative duration is ignored.
  void advance(Duration by);
  void advance_to(Instant to);

  // With auto-advance on, when no participant is busy and every sleeper sleeps only on its timer, time jumps
  // to the earliest deadline.
  void set_auto_advance(bool on);

  // A busy participant: while a Hold is alive auto-advance does not move time, except while the thread that
  // owns it is asleep on this clock (a call in flight is busy between its waits).
  void begin_busy() override;
  void end_busy() override;
  using Hold = SteppedClock::Busy;

  // Number of threads asleep on this clock right now.
  size_t sleepers() const;
  // Test synchronisation: waits (in real time, at most `bound`) until at least `n` threads are asleep.
  bool wait_for_sleepers(size_t n, std::chrono::milliseconds bound = std::chrono::seconds(5)) const;

 private:
  struct Sleeper {
    Instant deadline;
    Signal* wake;
    std::atomic<bool> due{false};
    int parked_holds;  // holds owned by the sleeping thread
  };

  void fire_due_locked() REQUIRES(mu_);
  void maybe_auto_advance_locked() REQUIRES(mu_);

  mutable Mutex mu_;
  mutable CondVar sleepers_changed_;
  std::atomic<int64_t> offset_ns_{0};  // time advanced so far; readers need no lock
  const Instant origin_;
  const WallTime wall_start_;
  std::list<Sleeper> sleepers_ GUARDED_BY(mu_);
  bool auto_advance_ GUARDED_BY(mu_) = false;
  int holds_ GUARDED_BY(mu_) = 0;
  int parked_holds_ GUARDED_BY(mu_) = 0;  // holds whose owner is asleep
};

}  // namespace humus::testing
