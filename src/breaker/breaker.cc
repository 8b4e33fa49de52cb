#include "breaker/breaker.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "breaker/default_policy.h"

namespace humus::breaker {
namespace {

// A deadline that saturates instead of overflowing, so a huge open_for or probe_timeout means "never".
Instant add(Instant at, Duration d) {
  if (d > Instant::max() - at) return Instant::max();
  return at + d;
}

// The bits of a window slot.
constexpr uint8_t kFailed = 1;
constexpr uint8_t kSlow = 2;

void add_result(Counts& c, bool failure, bool slow) {
  if (slow) ++c.slow_results;
  if (failure) {
    ++c.failures;
    ++c.consecutive_failures;
    c.consecutive_successes = 0;
  } else {
    ++c.successes;
    ++c.consecutive_successes;
    c.consecutive_failures = 0;
  }
}

}  // namespace

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kSuccess:
      return "success";
    case Outcome::kFailure:
      return "failure";
    case Outcome::kIgnored:
      return "ignored";
  }
  return "unknown";
}

namespace {

// The probe slots an own core starts with: enough for typical settings, grown on demand up to `probes`.
constexpr uint32_t kInitialProbeSlots = 4;

void add_timed_out(Core& core) { ++core.counts.timed_out_probes; }

}  // namespace

Core* Core::init(void* memory, uint32_t window, uint32_t probe_capacity) {
  std::memset(memory, 0, size(window, probe_capacity));
  Core* core = new (memory) Core{};
  core->state = State::kClosed;
  core->generation = 1;
  core->next_id = 1;
  core->counts.state = State::kClosed;
  core->window = window;
  core->probe_capacity = probe_capacity;
  return core;
}

uint32_t release_probes_of(Core& core, int32_t pid, uint64_t start_time) {
  uint32_t freed = 0;
  ProbeSlot* probes = core.probes();
  for (uint32_t i = 0; i < core.probe_count;) {
    if (probes[i].pid == pid && probes[i].start_time == start_time) {
      probes[i] = probes[--core.probe_count];
      add_timed_out(core);
      ++freed;
    } else {
      ++i;
    }
  }
  return freed;
}

void repair(Core& core) {
  if (core.state != State::kClosed && core.state != State::kOpen && core.state != State::kHalfOpen) {
    core.state = State::kClosed;
  }
  core.counts.state = core.state;
  if (core.probe_count > core.probe_capacity || core.state != State::kHalfOpen) core.probe_count = 0;
  if (core.ring_next >= core.window) core.ring_next = 0;
  if (core.state == State::kClosed) {
    // The window fills from slot 0, so ring_next results are in it unless it has wrapped.
    const uint32_t results =
        core.counts.window_results >= core.window ? core.window : std::max(core.counts.window_results, core.ring_next);
    if (results < core.window) core.ring_next = results;
    uint32_t failures = 0;
    uint32_t slow = 0;
    const uint8_t* ring = core.ring();
    for (uint32_t i = 0; i < results; ++i) {
      failures += (ring[i] & kFailed) != 0 ? 1 : 0;
      slow += (ring[i] & kSlow) != 0 ? 1 : 0;
    }
    core.counts.window_results = results;
    core.counts.window_failures = failures;
    core.counts.window_slow = slow;
  } else {
    core.counts.window_results = 0;
    core.counts.window_failures = 0;
    core.counts.window_slow = 0;
  }
  ++core.generation;  // every permit of the interrupted moment is stale now
  if (core.next_id == 0) core.next_id = 1;
}

Breaker::Breaker(Options options, std::shared_ptr<const Policy> policy, Clock& clock)
    : Breaker(options, std::move(policy), clock, nullptr, nullptr) {}

Breaker::Breaker(Options options, std::shared_ptr<const Policy> policy, Clock& clock, Core* core, External* external)
    : window_size_(std::max<uint32_t>(options.window, 1)),
      open_for_(options.open_for),
      max_probes_(std::max<uint32_t>(options.probes, 1)),
      probe_timeout_(options.probe_timeout),
      policy_(policy ? std::move(policy) : make_default_policy(DefaultPolicyParams{})),
      default_policy_(dynamic_cast<const DefaultPolicy*>(policy_.get())),
      clock_(clock),
      external_(core != nullptr ? external : nullptr),
      mu_(external_) {
  MutexLock lock(mu_);
  if (external_ != nullptr) {
    core_ = core;
  } else {
    const uint32_t capacity = std::min(max_probes_, kInitialProbeSlots);
    own_.reset(new std::byte[Core::size(window_size_, capacity)]);
    core_ = Core::init(own_.get(), window_size_, capacity);
  }
  // Reserved up front so the paths that use them allocate rarely (never, for typical settings).
  pending_.reserve(4);
  batch_.reserve(4);
}

Breaker::~Breaker() = default;

Admission Breaker::admit() {
  MutexLock lock(mu_);
  Admission admission;
  Core& c = *core_;
  if (c.state == State::kClosed) {  // the hot path: closed has nothing time-driven, so no clock read
    admission.admitted = true;
    admission.permit = Permit{c.generation, c.next_id++, false};
    admission.at = Position{c.state, c.generation};
    return admission;
  }
  Instant now = clock_.now();
  advance_locked(now);
  if (core_->state == State::kHalfOpen && !probe_room_locked() && external_ != nullptr) {
    // Every slot is taken: one may belong to a process that died holding it (docs/shared.md §22.2). Looked
    // for without the lock, which is never held across reading /proc.
    lock.unlock();
    const bool freed = external_->reclaim();
    lock.lock();
    if (freed) {
      now = clock_.now();
      advance_locked(now);
    }
  }
  Core& core = *core_;
  if (core.state == State::kHalfOpen && probe_room_locked()) {
    const uint64_t id = core_->next_id++;
    core_->probes()[core_->probe_count++] =
        ProbeSlot{id, add(now, probe_timeout_), external_ != nullptr ? external_->pid : 0, 0,
                  external_ != nullptr ? external_->start_time : 0};
    admission.admitted = true;
    admission.permit = Permit{core_->generation, id, true};
  } else {
    admission.retry_after = retry_after_locked(now);
  }
  admission.at = Position{core_->state, core_->generation};
  if (!pending_.empty()) deliver();
  return admission;
}

Status Breaker::record(const Permit& permit, Outcome outcome, Position* after, bool slow) {
  MutexLock lock(mu_);
  Status status;
  if (core_->state == State::kClosed) {
    if (permit.generation != core_->generation) {  // stale: admitted before a transition
      if (after != nullptr) *after = Position{core_->state, core_->generation};
      return status;
    }
    status = record_closed_locked(outcome, slow);
  } else {
    // Time first: a probe whose timeout has passed is gone even if no admit() has looked since, so its late
    // result is stale by the clock, not by the order of calls.
    advance_locked(clock_.now());
    if (permit.generation == core_->generation && core_->state == State::kHalfOpen && permit.probe &&
        take_probe_locked(permit.id)) {
      status = record_half_open_locked(outcome, slow);
    }
  }
  if (after != nullptr) *after = Position{core_->state, core_->generation};
  if (!pending_.empty()) deliver();
  return status;
}

State Breaker::state() {
  MutexLock lock(mu_);
  observe_locked();
  const State state = core_->state;
  if (!pending_.empty()) deliver();
  return state;
}

Counts Breaker::counts() {
  MutexLock lock(mu_);
  observe_locked();
  const Counts counts = core_->counts;
  if (!pending_.empty()) deliver();
  return counts;
}

Duration Breaker::retry_after() {
  MutexLock lock(mu_);
  if (core_->state == State::kClosed) return Duration::zero();
  const Instant now = clock_.now();
  advance_locked(now);
  const Duration retry_after = retry_after_locked(now);
  if (!pending_.empty()) deliver();
  return retry_after;
}

uint64_t Breaker::generation() {
  MutexLock lock(mu_);
  observe_locked();
  const uint64_t generation = core_->generation;
  if (!pending_.empty()) deliver();
  return generation;
}

void Breaker::set_listener(Listener listener) {
  std::shared_ptr<const Listener> next;
  if (listener) next = std::make_shared<const Listener>(std::move(listener));
  {
    MutexLock lock(mu_);
    listener_.swap(next);
  }
  // `next` now holds the old listener: destroyed here, outside the lock, as it may run user code.
}

void Breaker::observe_locked() {
  if (core_->state != State::kClosed) advance_locked(clock_.now());
}

void Breaker::advance_locked(Instant now) {
  Core& core = *core_;
  if (core.state == State::kOpen && now >= core.open_until) {
    // At the instant open_for ran out, not at `now`: the breaker has been half-open since then.
    transition_locked(State::kHalfOpen, core.open_until);
  }
  if (core.state == State::kHalfOpen) {
    ProbeSlot* probes = core.probes();
    for (uint32_t i = 0; i < core.probe_count;) {
      if (now >= probes[i].deadline) {
        probes[i] = probes[--core.probe_count];
        ++core.counts.timed_out_probes;
      } else {
        ++i;
      }
    }
  }
}

void Breaker::transition_locked(State to, Instant at) {
  Core& core = *core_;
  const State from = core.state;
  ++core.generation;
  if (listener_) pending_.push_back(Transition{from, to, core.counts, at, core.generation});
  core.state = to;
  core.counts = Counts{};
  core.counts.state = to;
  // Probes in flight belong to the old generation: their results are stale now, so they hold no slot.
  core.probe_count = 0;
  // The window is the closed state's alone; its ring contents need no clearing, since a fresh window is
  // filled from slot 0 before any slot is read back.
  core.ring_next = 0;
  if (to == State::kOpen) core.open_until = add(at, open_for_);
}

Duration Breaker::retry_after_locked(Instant now) const {
  Core& core = *core_;
  switch (core.state) {
    case State::kClosed:
      return Duration::zero();
    case State::kOpen:
      return core.open_until - now;  // > 0: advance_locked() ran at `now`
    case State::kHalfOpen: {
      if (core.probe_count < max_probes_) return Duration::zero();
      Instant oldest = Instant::max();
      const ProbeSlot* probes = core.probes();
      for (uint32_t i = 0; i < core.probe_count; ++i) oldest = std::min(oldest, probes[i].deadline);
      return oldest - now;  // > 0: timed-out probes were freed at `now`
    }
  }
  return Duration::zero();
}

bool Breaker::take_probe_locked(uint64_t id) {
  Core& core = *core_;
  ProbeSlot* probes = core.probes();
  for (uint32_t i = 0; i < core.probe_count; ++i) {
    if (probes[i].id == id) {
      probes[i] = probes[--core.probe_count];
      return true;
    }
  }
  return false;
}

bool Breaker::probe_room_locked() {
  Core& core = *core_;
  if (core.probe_count >= max_probes_) return false;
  if (core.probe_count < core.probe_capacity) return true;
  if (external_ != nullptr) return false;  // a shared core is made with max_probes_ slots
  // An own core grows, doubling up to max_probes_, as a vector would: moved whole, ring and slots.
  const uint32_t capacity = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{core.probe_capacity} * 2, max_probes_));
  std::unique_ptr<std::byte[]> grown(new std::byte[Core::size(window_size_, capacity)]);
  std::memcpy(grown.get(), own_.get(), Core::size(window_size_, core.probe_capacity));
  Core* next = reinterpret_cast<Core*>(grown.get());
  next->probe_capacity = capacity;
  // The slots sit after the ring, whose size is unchanged: the copy left them in place.
  own_ = std::move(grown);
  core_ = next;
  return true;
}

Counts Breaker::with_result_locked(bool failure, bool slow) const {
  Core& core = *core_;
  Counts next = core.counts;
  add_result(next, failure, slow);
  if (core.state == State::kClosed) {
    const bool full = core.counts.window_results == window_size_;
    const uint8_t evicted = full ? core.ring()[core.ring_next] : uint8_t{0};
    next.window_results = core.counts.window_results + (full ? 0u : 1u);
    next.window_failures =
        core.counts.window_failures - ((evicted & kFailed) != 0 ? 1u : 0u) + (failure ? 1u : 0u);
    next.window_slow = core.counts.window_slow - ((evicted & kSlow) != 0 ? 1u : 0u) + (slow ? 1u : 0u);
  }
  return next;
}

Status Breaker::record_closed_locked(Outcome outcome, bool slow) {
  if (outcome == Outcome::kIgnored) return Status();
  bool failure = outcome == Outcome::kFailure;
  Counts next = with_result_locked(failure, slow);
  bool open = false;
  Status status;
  if (default_policy_ != nullptr) {
    open = default_policy_->trips(next);
  } else {
    Result<bool> decided = policy_->trip(next);
    if (decided.ok()) {
      open = *decided;
    } else {
      // docs/breaker.md §9.4: a failing policy counts the result as a failure; with no decision the breaker stays
      // closed, and the next result asks again.
      status = decided.status();
      if (!failure) {
        failure = true;
        next = with_result_locked(true, slow);
      }
    }
  }
  Core& core = *core_;
  core.counts = next;
  core.ring()[core.ring_next] = static_cast<uint8_t>((failure ? kFailed : 0) | (slow ? kSlow : 0));
  core.ring_next = core.ring_next + 1 == window_size_ ? 0 : core.ring_next + 1;
  if (open) transition_locked(State::kOpen, clock_.now());
  return status;
}

Status Breaker::record_half_open_locked(Outcome outcome, bool slow) {
  if (outcome == Outcome::kIgnored) return Status();  // the slot is free already; nothing is counted
  const bool failure = outcome == Outcome::kFailure;
  Counts next = with_result_locked(failure, slow);
  ProbeDecision decision = ProbeDecision::kContinue;
  Status status;
  if (default_policy_ != nullptr) {
    decision = default_policy_->decide(next);
  } else {
    Result<ProbeDecision> decided = policy_->probe(next);
    if (decided.ok()) {
      decision = *decided;
    } else {
      // docs/breaker.md §9.4: counted as a failed probe, which reopens: the consistent state when nothing was decided.
      status = decided.status();
      if (!failure) next = with_result_locked(true, slow);
      decision = ProbeDecision::kReopen;
    }
  }
  core_->counts = next;
  if (decision == ProbeDecision::kClose) {
    transition_locked(State::kClosed, clock_.now());
  } else if (decision == ProbeDecision::kReopen) {
    transition_locked(State::kOpen, clock_.now());
  }
  return status;
}

void Breaker::deliver() {
  if (delivering_) return;  // that thread will find ours in pending_ after its current batch
  delivering_ = true;
  while (!pending_.empty()) {
    batch_.swap(pending_);  // both keep their capacity: no allocation once warmed up
    const std::shared_ptr<const Listener> listener = listener_;
    mu_.unlock();
    try {
      if (listener) {
        for (const Transition& transition : batch_) (*listener)(transition);
      }
    } catch (...) {
      batch_.clear();
      mu_.lock();
      delivering_ = false;
      throw;
    }
    batch_.clear();
    mu_.lock();
  }
  delivering_ = false;
}

}  // namespace humus::breaker
