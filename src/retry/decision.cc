#include "retry/decision.h"

#include <algorithm>

namespace humus::retry {

const char* decision_name(Decision decision) {
  switch (decision) {
    case Decision::kDone:
      return "done";
    case Decision::kAgain:
      return "again";
    case Decision::kThrottled:
      return "throttled";
    case Decision::kExhausted:
      return "exhausted";
    case Decision::kExpired:
      return "expired";
    case Decision::kStopped:
      return "stopped";
  }
  return "unknown";
}

const char* wait_source_name(WaitSource source) {
  switch (source) {
    case WaitSource::kNone:
      return "none";
    case WaitSource::kBackoff:
      return "backoff";
    case WaitSource::kCapped:
      return "capped";
    case WaitSource::kRetryAfter:
      return "retry_after";
  }
  return "unknown";
}

DecisionResult decide(const DecisionInput& input, const Backoff& backoff, Budget& budget, Random& random) {
  if (input.classification.retry != classify::RetryVerdict::kAgain) return {Decision::kDone, {}};
  const Budget::Charge charge = budget.on_retryable();
  if (!input.may_send_twice || input.body_too_large) return {Decision::kDone, {}};
  if (input.attempt >= input.max_attempts) return {Decision::kExhausted, {}};
  if (!budget.try_withdraw(charge)) return {Decision::kThrottled, {}};
  const Duration retry_after = std::max(input.classification.retry_after, Duration::zero());
  if (retry_after > input.max_retry_after) {
    budget.refund();
    return {Decision::kDone, {}};
  }
  const Duration drawn = backoff.draw(input.attempt, random);
  const Duration wait = std::max(drawn, retry_after);
  // Compared as durations, so a far deadline cannot overflow now + wait.
  if (input.deadline <= input.now || wait >= input.deadline - input.now) {
    budget.refund();
    return {Decision::kExpired, {}};
  }
  WaitSource source = WaitSource::kBackoff;
  if (retry_after > drawn) {
    source = WaitSource::kRetryAfter;
  } else if (backoff.cap(input.attempt) >= backoff.max()) {
    source = WaitSource::kCapped;
  }
  return {Decision::kAgain, wait, source};
}

}  // namespace humus::retry
