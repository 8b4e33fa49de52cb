#include "common/clock.h"

namespace humus {

void Signal::notify() {
  {
    MutexLock lock(mu_);
    notified_ = true;
  }
  cv_.notify_all();
}

bool Signal::notified() const {
  MutexLock lock(mu_);
  return notified_;
}

void Signal::reset() {
  MutexLock lock(mu_);
  notified_ = false;
}

void Signal::poke() {
  // Taking the lock orders the poke after a waiter's predicate check, so the wake-up is never lost.
  { MutexLock lock(mu_); }
  cv_.notify_all();
}

bool RealClock::sleep_until(Instant deadline, Signal& wake) {
  return wake.wait([] { return false; }, &deadline);
}

RealClock& RealClock::instance() {
  static RealClock clock;
  return clock;
}

}  // namespace humus
