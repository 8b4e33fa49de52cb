#include "testing/virtual_clock.h"

#include <algorithm>
#include <unordered_map>

namespace humus::testing {
namespace {

// How many Holds the current thread owns on each clock: a sleeping thread's holds do not keep time still.
int& thread_holds(const VirtualClock* clock) {
  thread_local std::unordered_map<const VirtualClock*, int> holds;
  return holds[clock];
}

}  // namespace

VirtualClock::VirtualClock(WallTime wall_start)
    : origin_(Instant(std::chrono::hours(24 * 365))), wall_start_(wall_start) {}

VirtualClock::~VirtualClock() = default;

Instant VirtualClock::now() const {
  // Acquire pairs with the release in advance_to(): whoever sees the new time sees what preceded it.
  return origin_ + Duration(offset_ns_.load(std::memory_order_acquire));
}

WallTime VirtualClock::wall_now() const {
  return wall_start_ + std::chrono::duration_cast<WallTime::duration>(
                           Duration(offset_ns_.load(std::memory_order_acquire)));
}

bool VirtualClock::sleep_until(Instant deadline, Signal& wake) {
  std::list<Sleeper>::iterator self;
  {
    MutexLock lock(mu_);
    if (now() >= deadline || wake.notified()) return wake.notified();
    self = sleepers_.emplace(sleepers_.end());
    self->deadline = deadline;
    self->wake = &wake;
    self->parked_holds = thread_holds(this);
    parked_holds_ += self->parked_holds;
    sleepers_changed_.notify_all();
    maybe_auto_advance_locked();
  }
  wake.wait([&] { return self->due.load(std::memory_order_acquire); }, nullptr);
  MutexLock lock(mu_);
  parked_holds_ -= self->parked_holds;
  sleepers_.erase(self);
  sleepers_changed_.notify_all();
  return wake.notified();
}

void VirtualClock::advance(Duration by) {
  if (by <= Duration::zero()) return;
  MutexLock lock(mu_);
  offset_ns_.fetch_add(by.count(), std::memory_order_acq_rel);
  fire_due_locked();
}

void VirtualClock::advance_to(Instant to) {
  MutexLock lock(mu_);
  const Duration by = to - now();
  if (by <= Duration::zero()) return;
  offset_ns_.fetch_add(by.count(), std::memory_order_acq_rel);
  fire_due_locked();
}

void VirtualClock::set_auto_advance(bool on) {
  MutexLock lock(mu_);
  auto_advance_ = on;
  maybe_auto_advance_locked();
}

void VirtualClock::fire_due_locked() {
  const Instant t = now();
  for (Sleeper& s : sleepers_) {
    if (s.deadline <= t && !s.due.load(std::memory_order_relaxed)) {
      s.due.store(true, std::memory_order_release);
      s.wake->poke();
    }
  }
}

void VirtualClock::maybe_auto_advance_locked() {
  if (!auto_advance_ || sleepers_.empty() || holds_ > parked_holds_) return;
  Instant earliest = Instant::max();
  for (const Sleeper& s : sleepers_) {
    // A sleeper already woken is about to run: time must wait for it.
    if (s.due.load(std::memory_order_relaxed) || s.wake->notified()) return;
    earliest = std::min(earliest, s.deadline);
  }
  const Duration by = earliest - now();
  if (by > Duration::zero()) offset_ns_.fetch_add(by.count(), std::memory_order_acq_rel);
  fire_due_locked();
}

void VirtualClock::begin_busy() {
  MutexLock lock(mu_);
  ++holds_;
  ++thread_holds(this);
}

void VirtualClock::end_busy() {
  MutexLock lock(mu_);
  --holds_;
  --thread_holds(this);
  maybe_auto_advance_locked();
}

size_t VirtualClock::sleepers() const {
  MutexLock lock(mu_);
  return sleepers_.size();
}

bool VirtualClock::wait_for_sleepers(size_t n, std::chrono::milliseconds bound) const {
  MutexLock lock(mu_);
  // As std::condition_variable::wait_for with a predicate: the bound is on the steady clock.
  const auto until = std::chrono::steady_clock::now() + bound;
  while (sleepers_.size() < n) {
    if (sleepers_changed_.wait_until(mu_, until) == std::cv_status::timeout) return sleepers_.size() >= n;
  }
  return true;
}

}  // namespace humus::testing
