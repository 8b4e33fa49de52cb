// The circuit breaker (docs/breaker.md §9): admits or rejects each attempt, counts results, and moves through
// closed → open → half-open → closed/open as its policy decides. Pure: no timers, no sockets; time comes from
// an injected Clock and every time-driven change (open → half-open, a probe timing out) happens lazily on the
// next call that looks.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "breaker/outcome.h"
#include "breaker/policy.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace humus::breaker {

class DefaultPolicy;

// Handed out by admit() and given back to record() with the attempt's result. A plain value: copy it freely.
struct Permit {
  uint64_t generation = 0;  // the state generation it was admitted in; 0 is never a live generation
  uint64_t id = 0;          // unique per breaker
  bool probe = false;       // admitted in half-open: holds a probe slot until recorded or timed out
};

// Where the breaker stood at a moment: its state and that state's generation (docs/trace.md).
struct Position {
  State state = State::kClosed;
  uint64_t generation = 0;
};

struct Admission {
  bool admitted = false;
  Permit permit;  // when admitted
  Position at;    // the state the attempt was admitted or rejected in
  // When rejected: in open, how much longer it stays open; in half-open with every probe slot taken, the
  // time until the oldest probe times out (a slot is certain to free by then, maybe sooner). Always > 0 for
  // a rejection.
  Duration retry_after = Duration::zero();
};

// One state change, as reported to the listener.
struct Transition {
  State from = State::kClosed;
  State to = State::kClosed;
  Counts counts_at_change;  // the counts of the state left, including the result that caused the change
  Instant at;               // when it took effect (for open → half-open: the instant open_for ran out)
  uint64_t generation = 0;  // the generation entered; consecutive transitions have consecutive generations
};

// A probe in flight: which attempt holds the slot, until when, and which process (docs/shared.md §22.2): pid 0
// is this process's own breaker; a shared breaker tags its probes with the holder's pid and start time, so a
// slot a killed worker held can be freed before its timeout.
struct ProbeSlot {
  uint64_t id;
  Instant deadline;  // admitted + probe_timeout
  int32_t pid;
  uint32_t reserved;
  uint64_t start_time;  // the holder's start time (/proc/<pid>/stat field 22)
};

// The breaker's mutable state as plain data with no pointer in it, so that it can live in the breaker's own
// memory or in a segment every process of the host maps (docs/shared.md §22.1). Followed in memory by the
// window's ring (`window` bytes) and then the probe slots (`probe_capacity` of them): core_size() bytes in all.
// Guarded by the breaker's lock (its own mutex or the segment's robust one).
struct Core {
  State state;
  uint32_t ring_next;  // where the next result goes
  uint64_t generation;
  uint64_t next_id;
  Instant open_until;  // in open, when it becomes half-open
  Counts counts;       // of the current state; counts.state == state
  uint32_t window;
  uint32_t probe_capacity;
  uint32_t probe_count;  // probes in flight: probes()[0, probe_count), unordered
  uint32_t reserved;

  static constexpr size_t ring_offset() { return sizeof(Core); }
  static constexpr size_t probes_offset(uint32_t window) {
    return (sizeof(Core) + window + alignof(ProbeSlot) - 1) / alignof(ProbeSlot) * alignof(ProbeSlot);
  }
  // Bytes for a core with a window of `window` results and room for `probe_capacity` probes.
  static constexpr size_t size(uint32_t window, uint32_t probe_capacity) {
    return probes_offset(window) + sizeof(ProbeSlot) * probe_capacity;
  }
  // Sets up a fresh closed breaker in `memory` (core_size() bytes, aligned for Core).
  static Core* init(void* memory, uint32_t window, uint32_t probe_capacity);

  uint8_t* ring() { return reinterpret_cast<uint8_t*>(this) + ring_offset(); }
  ProbeSlot* probes() { return reinterpret_cast<ProbeSlot*>(reinterpret_cast<std::byte*>(this) + probes_offset(window)); }
};
static_assert(std::is_trivially_copyable_v<Core> && std::is_standard_layout_v<Core>);
static_assert(std::is_trivially_copyable_v<ProbeSlot> && std::is_standard_layout_v<ProbeSlot>);

// Frees the probe slots `pid`/`start_time` holds, counting each as a timed-out probe: that process died
// holding them (docs/shared.md §22.2). Returns how many. The caller holds the lock the core lives under.
uint32_t release_probes_of(Core& core, int32_t pid, uint64_t start_time);
// Makes a core that a process killed in the middle of an update may have left half-written consistent again
// (docs/shared.md §22.2): a valid state, the window's counts recomputed from its ring, no probe beyond the
// capacity, and a new generation, so every permit of the interrupted moment is stale. The caller holds the lock.
void repair(Core& core);

// What a breaker whose core is not its own is given (docs/shared.md §22): the lock that guards the core, who it
// is, and how to find out about the other processes. Implemented by src/shared/.
class External {
 public:
  virtual ~External() = default;
  // A lock every process sharing the core takes; lock() returns with the core consistent even when its last
  // holder died holding it. Never held across I/O or a callback.
  virtual void lock() = 0;
  virtual void unlock() = 0;
  // Called without the lock when every probe slot is taken: frees the slots of holders found dead. Returns
  // true when it freed any.
  virtual bool reclaim() = 0;
  // Live processes sharing the core, this one included.
  virtual uint32_t processes() = 0;
  int32_t pid = 0;          // tags of this process's probes
  uint64_t start_time = 0;
};

// Thread-safe: every member function may be called from any thread concurrently.
class Breaker {
 public:
  struct Options {
    uint32_t window = 20;               // results the trip policy sees; 0 is taken as 1
    Duration open_for = std::chrono::seconds(10);
    uint32_t probes = 1;                // probes in flight at once in half-open; 0 is taken as 1
    Duration probe_timeout = std::chrono::seconds(10);
  };

  using Listener = std::function<void(const Transition&)>;

  // A null policy means the built-in one with docs/settings.md §3 defaults. `clock` must outlive the breaker.
  Breaker(Options options, std::shared_ptr<const Policy> policy, Clock& clock);
  // With `external` set: a breaker whose core lives elsewhere (a shared segment), made for `options` (its
  // window, and probe slots for its probes), guarded by `external`'s lock; both must outlive the breaker. The
  // listener and its queue stay this breaker's: a transition is delivered by the process that made it. Both
  // null: as the constructor above.
  Breaker(Options options, std::shared_ptr<const Policy> policy, Clock& clock, Core* core, External* external);
  ~Breaker();
  Breaker(const Breaker&) = delete;
  Breaker& operator=(const Breaker&) = delete;

  // Admits an attempt or rejects it (docs/breaker.md §9.1). Closed: always admitted. Open: rejected until open_for has
  // passed since it opened, then half-open. Half-open: admitted as a probe while fewer than `probes` are in
  // flight.
  Admission admit();

  // Counts an admitted attempt's result. A permit from an earlier generation, or a probe that already timed
  // out, changes nothing (docs/breaker.md §9.4) and returns OK. When the policy fails, the result counts as a failure,
  // the breaker stays consistent (half-open reopens; closed stays closed) and the policy's error
  // (kCallback / kProgram) is returned so the caller can end the call with it. Record each permit once:
  // closed-state permits are not tracked (that would cost the hot path), so a second record counts again.
  // `after`, when given, receives the state the breaker is in once the result was counted.
  // `slow`: the attempt took longer than breaker.slow_call_duration (docs/breaker.md §9.3a), counted besides
  // the outcome (the caller measures it: an attempt's end may be a streamed body's).
  Status record(const Permit& permit, Outcome outcome, Position* after = nullptr, bool slow = false);

  // The current state, after any lazy advance that is due.
  State state();
  // The current state's counts (window fields are non-zero only in closed).
  Counts counts();
  // Zero when an attempt would be admitted now; otherwise as Admission::retry_after.
  Duration retry_after();
  // The current state generation; starts at 1 and grows by one per transition. For tests and telemetry.
  uint64_t generation();

  // Live processes sharing this breaker's state (docs/shared.md §22): 0 when it is this process's alone.
  uint32_t processes() { return external_ != nullptr ? external_->processes() : 0; }

  // Replaces the listener (an empty function removes it). Delivery guarantees: each transition is delivered
  // exactly once, never with the breaker's lock held (the listener may call the breaker), never
  // concurrently with another delivery of this breaker, and in transition order (generation order). It is
  // delivered on the thread whose call caused it before that call returns, unless another thread is
  // delivering at that moment: that thread then delivers it after its own. Transitions made while no
  // listener is set are not reported. A listener must not throw; if it does, the exception propagates out of
  // the call that was delivering, the rest of its batch is dropped, and later transitions are delivered.
  void set_listener(Listener listener);

 private:
  // The lock the core lives under: this breaker's own mutex, or the external one. A capability of its own, so
  // the analysis checks every access to the core against it.
  class CAPABILITY("mutex") StateLock {
   public:
    explicit StateLock(External* external) : external_(external) {}
    void lock() ACQUIRE() {
      if (external_ != nullptr) {
        external_->lock();
      } else {
        mu_.lock();
      }
    }
    void unlock() RELEASE() {
      if (external_ != nullptr) {
        external_->unlock();
      } else {
        mu_.unlock();
      }
    }

   private:
    Mutex mu_;
    External* const external_;
  };

  void observe_locked() REQUIRES(mu_);             // advance_locked(now) unless closed (no timed change)
  void advance_locked(Instant now) REQUIRES(mu_);  // open → half-open when due; frees timed-out probe slots
  void transition_locked(State to, Instant at) REQUIRES(mu_);
  Duration retry_after_locked(Instant now) const REQUIRES(mu_);
  bool take_probe_locked(uint64_t id) REQUIRES(mu_);  // frees probe `id`'s slot; false when it holds none
  bool probe_room_locked() REQUIRES(mu_);             // a probe slot is free (an own core grows to max_probes_)
  Counts with_result_locked(bool failure, bool slow) const REQUIRES(mu_);  // counts_ after one more result
  Status record_closed_locked(Outcome outcome, bool slow) REQUIRES(mu_);
  Status record_half_open_locked(Outcome outcome, bool slow) REQUIRES(mu_);
  // Delivers queued transitions (see set_listener): lets mu_ go while the listener runs, holds it again on
  // return (and when the listener throws), so the caller's lock gives it back at the end of its scope.
  void deliver() REQUIRES(mu_);

  const uint32_t window_size_;
  const Duration open_for_;
  const uint32_t max_probes_;
  const Duration probe_timeout_;
  const std::shared_ptr<const Policy> policy_;
  const DefaultPolicy* const default_policy_;  // policy_ itself when it is the built-in one: called directly
  Clock& clock_;
  External* const external_;  // null: the core is own_

  mutable StateLock mu_;
  std::unique_ptr<std::byte[]> own_ GUARDED_BY(mu_);  // the core's memory when it is this breaker's own
  Core* core_ GUARDED_BY(mu_) PT_GUARDED_BY(mu_);     // in own_ or in the external memory
  std::shared_ptr<const Listener> listener_ GUARDED_BY(mu_);
  std::vector<Transition> pending_ GUARDED_BY(mu_);     // transitions not yet delivered, in order
  bool delivering_ GUARDED_BY(mu_) = false;             // a thread is in deliver()'s unlocked part
  std::vector<Transition> batch_;         // owned by the thread that set delivering_
};

}  // namespace humus::breaker
