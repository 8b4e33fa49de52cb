#include "bulkhead/bulkhead.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <new>
#include <string>

#include "common/duration.h"

namespace humus::bulkhead {
namespace {

// Forwards a cancel to a waiter's Signal for as long as it lives.
class WakerScope {
 public:
  WakerScope(CancelToken* token, Signal& wake) : token_(token) {
    if (token_ != nullptr) token_->set_waker([w = &wake] { w->notify(); });
  }
  ~WakerScope() {
    if (token_ != nullptr) token_->clear_waker();
  }
  WakerScope(const WakerScope&) = delete;
  WakerScope& operator=(const WakerScope&) = delete;

 private:
  CancelToken* token_;
};

}  // namespace

// --- Slot -------------------------------------------------------------------------------------------------

Slot& Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = other.owner_;
    since_ = other.since_;
    other.owner_ = nullptr;
  }
  return *this;
}

void Slot::release(Outcome outcome) noexcept {
  if (owner_ == nullptr) return;
  owner_->release(since_, outcome);
  owner_ = nullptr;
}

// --- Bulkhead ---------------------------------------------------------------------------------------------

Bulkhead::Bulkhead(uint32_t max_concurrent, Duration wait, Clock& clock)
    : Bulkhead(max_concurrent, wait, clock, nullptr) {}

Bulkhead::Bulkhead(uint32_t max_concurrent, Duration wait, Clock& clock, External* external)
    : Bulkhead(max_concurrent, wait, clock, external, nullptr) {}

Bulkhead::Bulkhead(uint32_t max_concurrent, Duration wait, Clock& clock, External* external,
                   std::unique_ptr<Limit> limit)
    : wait_(std::max(wait, Duration::zero())),
      clock_(clock),
      external_(external),
      algorithm_(std::move(limit)),
      limit_(algorithm_ != nullptr ? algorithm_->limit() : max_concurrent),
      limit_seen_(algorithm_ != nullptr ? algorithm_->limit() : max_concurrent) {
  assert(algorithm_ == nullptr || external_ == nullptr);
}

Instant Bulkhead::grant_time() const { return algorithm_ != nullptr ? clock_.now() : Instant{}; }

bool Bulkhead::take_free_locked() {
  if (in_flight_ >= limit_ || head_ != nullptr) return false;
  if (external_ != nullptr && !external_->try_acquire()) return false;
  ++in_flight_;
  return true;
}

Bulkhead::~Bulkhead() { assert(in_flight_ == 0 && head_ == nullptr); }

Result<Slot> Bulkhead::acquire(Instant call_deadline, CancelToken* cancel) {
  if (cancel != nullptr && cancel->cancelled()) {
    return Status(Code::kCancelled, "cancelled before a bulkhead slot was taken");
  }
  MutexLock lock(mu_);
  // Fast path. Only when nobody queues: a freed slot belongs to the oldest waiter, not to a newcomer.
  if (take_free_locked()) return Slot(this, grant_time());
  if (external_ != nullptr && in_flight_ < limit_ && head_ == nullptr) {
    // The host is at its cap: a process that died holding permits gives them back (read from /proc, so
    // without the lock).
    lock.unlock();
    const bool freed = external_->reclaim();
    lock.lock();
    if (freed && take_free_locked()) return Slot(this, grant_time());
  }

  const Instant start = clock_.now();
  // start + wait_, saturating: a huge wait must not overflow the time point.
  const Instant wait_end = wait_ >= Instant::max() - start ? Instant::max() : start + wait_;
  const bool deadline_first = call_deadline < wait_end;
  const Instant until = deadline_first ? call_deadline : wait_end;
  if (until <= start) return refusal(deadline_first, Duration::zero());

  Waiter self;
  push_locked(self);
  lock.unlock();
  // A clock sleeps on one Signal: the token's waker forwards a cancel to ours. The lambda holds one pointer,
  // so std::function stores it inline (no allocation). Declared after `self`, so the waker is cleared (and,
  // by the token's lock, no longer running) before self.wake dies.
  const WakerScope waker(cancel, self.wake);
  for (;;) {
    // A cancel that came before the waker was set is seen here: cancel() sets its flag before it takes the
    // lock under which set_waker() ran.
    if (cancel == nullptr || !cancel->cancelled()) {
      // Ends on a hand-over or a cancel (both notify self.wake) or at `until`; when shared, also every
      // kSharedPoll, to look for a permit another process gave back.
      Instant wake_at = until;
      if (external_ != nullptr) {
        const Instant now = clock_.now();
        if (until - now > kSharedPoll) wake_at = now + kSharedPoll;
      }
      clock_.sleep_until(wake_at, self.wake);
    }
    lock.lock();
    // Everything is re-checked under mu_: release() may hand this waiter a slot right up to this point.
    if (cancel != nullptr && cancel->cancelled()) {
      if (self.granted) {
        release_locked(nullptr);  // pass the handed-over slot on rather than drop it
      } else {
        unlink_locked(self);
      }
      return Status(Code::kCancelled, "cancelled while waiting for a bulkhead slot");
    }
    if (self.granted) return Slot(this, grant_time());  // in_flight_ already counts it: release() handed it over
    if (external_ != nullptr && head_ == &self && in_flight_ < limit_ && external_->try_acquire()) {
      unlink_locked(self);  // first in line here, and another process gave a permit back
      ++in_flight_;
      return Slot(this, grant_time());
    }
    if (clock_.now() >= until) {
      unlink_locked(self);
      return refusal(deadline_first, until - start);
    }
    lock.unlock();  // woken with nothing to do (cannot happen with a well-behaved clock): sleep again
  }
}

uint32_t Bulkhead::in_flight() const {
  MutexLock lock(mu_);
  return in_flight_;
}

size_t Bulkhead::waiting() const {
  MutexLock lock(mu_);
  return waiting_;
}

void Bulkhead::release(Instant since, Outcome outcome) {
  if (algorithm_ == nullptr || outcome == Outcome::kIgnored) {
    MutexLock lock(mu_);
    release_locked(nullptr);
    return;
  }
  const Instant now = clock_.now();
  MutexLock lock(mu_);
  const Sample sample{now - since, in_flight_, outcome == Outcome::kDropped};
  release_locked(&sample);
}

void Bulkhead::release_locked(const Sample* sample) {
  assert(in_flight_ > 0);
  if (sample != nullptr) {
    limit_ = algorithm_->on_sample(*sample);
    limit_seen_.store(limit_, std::memory_order_relaxed);
  }
  if (external_ != nullptr) {
    // Fixed (adaptive is never shared): the host-wide permit goes with the slot to the oldest waiter.
    if (head_ != nullptr) {
      hand_over_locked(*head_);
    } else {
      --in_flight_;
      external_->release();
    }
    return;
  }
  --in_flight_;
  // Fixed: at most the one slot just freed. Adaptive: as many as a raised limit leaves, none while it is lowered.
  while (head_ != nullptr && in_flight_ < limit_) {
    ++in_flight_;
    hand_over_locked(*head_);
  }
}

void Bulkhead::hand_over_locked(Waiter& w) {
  // Direct hand-off: in_flight_ already counts the slot, which changes hands. Notified under mu_, which the
  // waiter must take before it can leave acquire(), so its Signal is still alive.
  unlink_locked(w);
  w.granted = true;
  if (w.on_grant != nullptr) {
    w.on_grant(w.arg);
  } else {
    w.wake.notify();
  }
}

std::optional<Slot> Bulkhead::acquire_or_queue(AsyncWaiter& waiter) {
  MutexLock lock(mu_);
  if (take_free_locked()) return Slot(this, grant_time());
  if (external_ != nullptr && in_flight_ < limit_ && head_ == nullptr) {
    lock.unlock();
    const bool freed = external_->reclaim();
    lock.lock();
    if (freed && take_free_locked()) return Slot(this, grant_time());
  }
  waiter.node_.granted = false;
  push_locked(waiter.node_);
  return std::nullopt;
}

Slot Bulkhead::take(AsyncWaiter& waiter) {
  MutexLock lock(mu_);
  assert(waiter.node_.granted);
  waiter.node_.granted = false;
  return Slot(this, grant_time());  // in_flight_ already counts it: release() handed it over
}

bool Bulkhead::abandon(AsyncWaiter& waiter) {
  MutexLock lock(mu_);
  if (waiter.node_.granted) return false;
  if (waiter.node_.queued) unlink_locked(waiter.node_);
  return true;
}

void Bulkhead::push_locked(Waiter& w) {
  w.prev = tail_;
  w.next = nullptr;
  if (tail_ != nullptr) {
    tail_->next = &w;
  } else {
    head_ = &w;
  }
  tail_ = &w;
  w.queued = true;
  ++waiting_;
}

void Bulkhead::unlink_locked(Waiter& w) {
  if (w.prev != nullptr) {
    w.prev->next = w.next;
  } else {
    head_ = w.next;
  }
  if (w.next != nullptr) {
    w.next->prev = w.prev;
  } else {
    tail_ = w.prev;
  }
  w.prev = nullptr;
  w.next = nullptr;
  w.queued = false;
  --waiting_;
}

Status Bulkhead::refusal(bool deadline_first, Duration waited) const {
  const uint32_t limit = this->limit();
  const std::string in_flight = std::to_string(limit) + (limit == 1 ? " call" : " calls") + " in flight";
  if (deadline_first) {
    return Status(Code::kTimeout, "deadline passed waiting for a bulkhead slot: " + in_flight +
                                      ", none freed within " + format_duration(waited));
  }
  return Status(Code::kBulkheadFull,
                "bulkhead full: " + in_flight + ", none freed within " + format_duration(wait_));
}

void Bulkhead::forget_calls_after_fork() {
  new (&mu_) Mutex();  // std::mutex is trivially destructible: nothing is lost by building over it
  in_flight_ = 0;
  waiting_ = 0;
  head_ = nullptr;
  tail_ = nullptr;
}

}  // namespace humus::bulkhead
