// A clock on which time moves only when its participants let it: the virtual clock of the testing kit
// (testing/virtual_clock.h, docs/testing-kit.md §16.1). What the event loop needs of one to run on it, sleeping
// on the clock instead of in epoll and keeping time still while it works, without depending on testing/.
#pragma once

#include "common/clock.h"

namespace humus {

class SteppedClock : public Clock {
 public:
  // The calling thread is a busy participant from begin_busy() to its end_busy(): time does not jump on its
  // own meanwhile, except while that thread sleeps on this clock. Thread-safe; the two pair up per thread.
  virtual void begin_busy() = 0;
  virtual void end_busy() = 0;

  // Busy for a scope.
  class Busy {
   public:
    explicit Busy(SteppedClock& clock) : clock_(clock) { clock_.begin_busy(); }
    ~Busy() { clock_.end_busy(); }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    SteppedClock& clock_;
  };
};

}  // namespace humus
