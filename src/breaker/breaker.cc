#include "breaker/breaker.h"

#include <algorithm>
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

Breaker::Breaker(Options options, std::shared_ptr<const Policy> policy, Clock& clock)
    : window_size_(std::max<uint32_t>(options.window, 1)),
      open_for_(options.open_for),
      max_probes_(std::max<uint32_t>(options.probes, 1)),
      probe_timeout_(options.probe_timeout),
      policy_(policy ? std::move(policy) : make_default_policy(DefaultPolicyParams{})),
      default_policy_(dynamic_cast<const DefaultPolicy*>(policy_.get())),
      clock_(clock),
      ring_(window_size_, 0) {
  // Reserved up front so the paths that use them allocate rarely (never, for typical settings).
  probes_.reserve(std::min<uint32_t>(max_probes_, 64));
  pending_.reserve(4);
  batch_.reserve(4);
}

Breaker::~Breaker() = default;

Admission Breaker::admit() {
  MutexLock lock(mu_);
  Admission admission;
  if (state_ == State::kClosed) {  // the hot path: closed has nothing time-driven, so no clock read
    admission.admitted = true;
    admission.permit = Permit{generation_, next_id_++, false};
    admission.at = Position{state_, generation_};
    return admission;
  }
  const Instant now = clock_.now();
  advance_locked(now);
  if (state_ == State::kHalfOpen && probes_.size() < max_probes_) {
    const uint64_t id = next_id_++;
    probes_.push_back(ProbeSlot{id, add(now, probe_timeout_)});
    admission.admitted = true;
    admission.permit = Permit{generation_, id, true};
  } else {
    admission.retry_after = retry_after_locked(now);
  }
  admission.at = Position{state_, generation_};
  if (!pending_.empty()) deliver();
  return admission;
}

Status Breaker::record(const Permit& permit, Outcome outcome, Position* after, bool slow) {
  MutexLock lock(mu_);
  Status status;
  if (state_ == State::kClosed) {
    if (permit.generation != generation_) {  // stale: admitted before a transition
      if (after != nullptr) *after = Position{state_, generation_};
      return status;
    }
    status = record_closed_locked(outcome, slow);
  } else {
    // Time first: a probe whose timeout has passed is gone even if no admit() has looked since, so its late
    // result is stale by the clock, not by the order of calls.
    advance_locked(clock_.now());
    if (permit.generation == generation_ && state_ == State::kHalfOpen && permit.probe &&
        take_probe_locked(permit.id)) {
      status = record_half_open_locked(outcome, slow);
    }
  }
  if (after != nullptr) *after = Position{state_, generation_};
  if (!pending_.empty()) deliver();
  return status;
}

State Breaker::state() {
  MutexLock lock(mu_);
  observe_locked();
  const State state = state_;
  if (!pending_.empty()) deliver();
  return state;
}

Counts Breaker::counts() {
  MutexLock lock(mu_);
  observe_locked();
  const Counts counts = counts_;
  if (!pending_.empty()) deliver();
  return counts;
}

Duration Breaker::retry_after() {
  MutexLock lock(mu_);
  if (state_ == State::kClosed) return Duration::zero();
  const Instant now = clock_.now();
  advance_locked(now);
  const Duration retry_after = retry_after_locked(now);
  if (!pending_.empty()) deliver();
  return retry_after;
}

uint64_t Breaker::generation() {
  MutexLock lock(mu_);
  observe_locked();
  const uint64_t generation = generation_;
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
  if (state_ != State::kClosed) advance_locked(clock_.now());
}

void Breaker::advance_locked(Instant now) {
  if (state_ == State::kOpen && now >= open_until_) {
    // At the instant open_for ran out, not at `now`: the breaker has been half-open since then.
    transition_locked(State::kHalfOpen, open_until_);
  }
  if (state_ == State::kHalfOpen) {
    for (size_t i = 0; i < probes_.size();) {
      if (now >= probes_[i].deadline) {
        probes_[i] = probes_.back();
        probes_.pop_back();
        ++counts_.timed_out_probes;
      } else {
        ++i;
      }
    }
  }
}

void Breaker::transition_locked(State to, Instant at) {
  const State from = state_;
  ++generation_;
  if (listener_) pending_.push_back(Transition{from, to, counts_, at, generation_});
  state_ = to;
  counts_ = Counts{};
  counts_.state = to;
  // Probes in flight belong to the old generation: their results are stale now, so they hold no slot.
  probes_.clear();
  // The window is the closed state's alone; its ring contents need no clearing, since a fresh window is
  // filled from slot 0 before any slot is read back.
  ring_next_ = 0;
  if (to == State::kOpen) open_until_ = add(at, open_for_);
}

Duration Breaker::retry_after_locked(Instant now) const {
  switch (state_) {
    case State::kClosed:
      return Duration::zero();
    case State::kOpen:
      return open_until_ - now;  // > 0: advance_locked() ran at `now`
    case State::kHalfOpen: {
      if (probes_.size() < max_probes_) return Duration::zero();
      Instant oldest = Instant::max();
      for (const ProbeSlot& slot : probes_) oldest = std::min(oldest, slot.deadline);
      return oldest - now;  // > 0: timed-out probes were freed at `now`
    }
  }
  return Duration::zero();
}

bool Breaker::take_probe_locked(uint64_t id) {
  for (ProbeSlot& slot : probes_) {
    if (slot.id == id) {
      slot = probes_.back();
      probes_.pop_back();
      return true;
    }
  }
  return false;
}

Counts Breaker::with_result_locked(bool failure, bool slow) const {
  Counts next = counts_;
  add_result(next, failure, slow);
  if (state_ == State::kClosed) {
    const bool full = counts_.window_results == window_size_;
    const uint8_t evicted = full ? ring_[ring_next_] : uint8_t{0};
    next.window_results = counts_.window_results + (full ? 0u : 1u);
    next.window_failures = counts_.window_failures - ((evicted & kFailed) != 0 ? 1u : 0u) + (failure ? 1u : 0u);
    next.window_slow = counts_.window_slow - ((evicted & kSlow) != 0 ? 1u : 0u) + (slow ? 1u : 0u);
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
  counts_ = next;
  ring_[ring_next_] = static_cast<uint8_t>((failure ? kFailed : 0) | (slow ? kSlow : 0));
  ring_next_ = ring_next_ + 1 == window_size_ ? 0 : ring_next_ + 1;
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
  counts_ = next;
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
