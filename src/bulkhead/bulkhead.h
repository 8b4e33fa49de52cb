// The bulkhead (docs/bulkhead.md §11): at most max_concurrent calls to one dependency in flight; a call that cannot get a
// slot within `wait` is turned away with HUMUS_E_BULKHEAD_FULL. It knows nothing of the breaker or the
// budget: a call it turns away never reached the dependency.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "bulkhead/limit.h"
#include "common/cancel.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace humus::bulkhead {

class Bulkhead;

// A host-wide cap the bulkhead also answers to (docs/shared.md §22.3): the permits every process sharing it
// holds, counted in a shared segment. Implemented by src/shared/.
class External {
 public:
  virtual ~External() = default;
  // Takes one host-wide permit if the host is under its cap. Cheap, no I/O: called with the bulkhead's lock.
  virtual bool try_acquire() = 0;
  virtual void release() = 0;
  // Called without the bulkhead's lock when the host is at its cap: gives back the permits of processes
  // found dead. True when it freed any.
  virtual bool reclaim() = 0;
};

// How a call that held a slot ended, for an adaptive limit (docs/bulkhead.md §11.1).
enum class Outcome {
  kDone,     // it ended: its latency is a sample
  kDropped,  // it ended in a timeout or a 503: a sample, and the dependency shed it
  kIgnored,  // no sample: cancelled, rejected by the breaker, nothing sent
};

// A permit for one call in flight: move-only, given back on destruction (or release()). It points at its
// Bulkhead, which must outlive it.
class Slot {
 public:
  Slot() = default;  // holds nothing
  Slot(Slot&& other) noexcept : owner_(other.owner_), since_(other.since_) { other.owner_ = nullptr; }
  Slot& operator=(Slot&& other) noexcept;
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot() { release(); }

  // Gives the slot back now (to the oldest waiter, if any), reporting how the call ended to an adaptive
  // limit; a slot given back on destruction reports kDone (a streamed body's end). Idempotent.
  void release(Outcome outcome = Outcome::kDone) noexcept;
  [[nodiscard]] bool held() const { return owner_ != nullptr; }

 private:
  friend class Bulkhead;
  Slot(Bulkhead* owner, Instant since) : owner_(owner), since_(since) {}
  Bulkhead* owner_ = nullptr;
  Instant since_{};  // when it was granted; read only by an adaptive bulkhead
};

// Thread-safe. Waits run on the injected Clock (so on the virtual clock in tests). Fair: a freed slot is
// handed straight to the oldest waiter, so newcomers cannot overtake a queue. The fast path (a slot free,
// nobody queued) is one mutex lock and unlock, as is giving a slot back.
class Bulkhead {
 private:
  // One per queued caller (on its stack, or inside an AsyncWaiter). Linked in FIFO order.
  struct Waiter {
    Signal wake;             // notified when a slot is handed over, and by a cancel through the token's waker
    // The four below are guarded by the bulkhead's mu_, which a GUARDED_BY in a nested struct cannot name
    // (the analysis checks the accesses through head_ and tail_, which are PT_GUARDED_BY it).
    bool granted = false;
    bool queued = false;
    Waiter* prev = nullptr;
    Waiter* next = nullptr;
    void (*on_grant)(void*) = nullptr;  // an asynchronous waiter is granted through this, not `wake`
    void* arg = nullptr;
  };

 public:
  // max_concurrent ≥ 1 and wait ≥ 0 are the settings' checks (docs/settings.md §3); a negative wait acts as 0.
  Bulkhead(uint32_t max_concurrent, Duration wait, Clock& clock);
  // As above, and a slot is only granted with a host-wide permit from `external`, which must outlive the
  // bulkhead. A slot freed in this process goes to this process's oldest waiter with its permit; one freed
  // in another process is noticed by a blocking waiter within kSharedPoll (docs/shared.md §22.3).
  // Null `external`: as the constructor above.
  Bulkhead(uint32_t max_concurrent, Duration wait, Clock& clock, External* external);
  // As above; with `limit` (docs/bulkhead.md §11.1) the bulkhead is adaptive: `limit` decides how many calls may be
  // in flight from the samples of the calls that held a slot, starting at limit->limit(), and max_concurrent
  // is unused. An adaptive bulkhead is never shared (the settings refuse it): `external` must then be null.
  Bulkhead(uint32_t max_concurrent, Duration wait, Clock& clock, External* external, std::unique_ptr<Limit> limit);
  static constexpr Duration kSharedPoll = std::chrono::milliseconds(2);
  ~Bulkhead();  // no Slot or waiter may outlive it
  Bulkhead(const Bulkhead&) = delete;
  Bulkhead& operator=(const Bulkhead&) = delete;

  // A slot, waiting at most `wait` for one:
  //  - HUMUS_E_BULKHEAD_FULL when none is freed within `wait` (at once when wait is 0): "bulkhead full: 50
  //    calls in flight, none freed within 500ms";
  //  - HUMUS_E_TIMEOUT when `call_deadline` comes before `wait` is over and no slot was freed by then (the
  //    call's deadline, not the bulkhead, ended the wait); a free slot is granted whatever the deadline;
  //  - HUMUS_E_CANCELLED when `cancel` is cancelled before or during the wait (a slot handed over at the
  //    same moment is passed on to the next waiter). A slot handed over as the wait times out is granted.
  // While it waits, acquire() sets `cancel`'s waker (to wake its own Signal) and clears it before returning,
  // so the call must have no other waker registered then.
  Result<Slot> acquire(Instant call_deadline, CancelToken* cancel = nullptr);
  Result<Slot> acquire() { return acquire(Instant::max(), nullptr); }

  // For a caller that must not block (an event loop): queued by acquire_or_queue() when no slot is free;
  // `on_grant(arg)` then runs when a slot is handed over — on the releasing thread, with the bulkhead's lock
  // held, so it must only hand off (post to the loop) — after which take() returns the slot.
  class AsyncWaiter {
   public:
    AsyncWaiter(void (*on_grant)(void* arg), void* arg) {
      node_.on_grant = on_grant;
      node_.arg = arg;
    }

   private:
    friend class Bulkhead;
    Waiter node_;
  };
  // A free slot at once, or nothing with `waiter` queued behind every earlier waiter.
  std::optional<Slot> acquire_or_queue(AsyncWaiter& waiter);
  // The slot handed to `waiter` (after its on_grant ran).
  Slot take(AsyncWaiter& waiter);
  // Stops waiting (its wait ran out or it was cancelled): true when it was still queued and is no longer;
  // false when a slot was handed over first — take() it (and release it if it is no longer wanted).
  bool abandon(AsyncWaiter& waiter);

  // The refusal when no slot came: kTimeout when the call's deadline ended the wait, else kBulkheadFull.
  Status refusal(bool deadline_first, Duration waited) const;

  [[nodiscard]] uint32_t in_flight() const;  // slots held (including ones handed over but not yet picked up)
  [[nodiscard]] size_t waiting() const;      // callers queued for a slot
  // The limit now: max_concurrent when fixed; an adaptive one moves with every sample. Lock-free.
  [[nodiscard]] uint32_t limit() const { return limit_seen_.load(std::memory_order_relaxed); }
  [[nodiscard]] bool adaptive() const { return algorithm_ != nullptr; }
  Duration wait() const { return wait_; }

  // In a forked child, before the child's first call (docs/fork.md §23.3): the slots held and the queue are the
  // parent's calls', which this process never runs or ends. Forgotten, and the lock made anew (a thread of the
  // parent may have held it at the fork). Only while no thread of this process uses the bulkhead.
  void forget_calls_after_fork() NO_THREAD_SAFETY_ANALYSIS;

 private:
  friend class Slot;

  void release(Instant since, Outcome outcome) EXCLUDES(mu_);
  // Gives a slot back; an adaptive limit first takes `sample` in. Then the oldest waiters get the slots the
  // limit leaves free: one when it stayed as it was, more when it rose, none while it is below the slots held
  // (a lowered limit never takes a slot back; it waits for calls to end).
  void release_locked(const Sample* sample) REQUIRES(mu_);
  void hand_over_locked(Waiter& w) REQUIRES(mu_);
  Instant grant_time() const;  // a new slot's start: the clock's now when adaptive, else not read
  // A slot for a newcomer when nobody queues and one is free here and, when shared, host-wide.
  bool take_free_locked() REQUIRES(mu_);
  void push_locked(Waiter& w) REQUIRES(mu_);
  void unlink_locked(Waiter& w) REQUIRES(mu_);

  const Duration wait_;
  Clock& clock_;
  External* const external_ = nullptr;
  const std::unique_ptr<Limit> algorithm_;  // null: fixed. Used under mu_ (Limit is not thread-safe)
  mutable Mutex mu_;
  uint32_t limit_ GUARDED_BY(mu_);
  // A copy of limit_ for readers outside the lock (limit(), the metric, readiness). Relaxed: it is a reading
  // for display, ordered with nothing else; every decision reads limit_ under mu_.
  std::atomic<uint32_t> limit_seen_;
  uint32_t in_flight_ GUARDED_BY(mu_) = 0;
  size_t waiting_ GUARDED_BY(mu_) = 0;
  Waiter* head_ GUARDED_BY(mu_) PT_GUARDED_BY(mu_) = nullptr;  // the oldest waiter
  Waiter* tail_ GUARDED_BY(mu_) PT_GUARDED_BY(mu_) = nullptr;
};

}  // namespace humus::bulkhead
