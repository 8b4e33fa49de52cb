#include "client/attempt_result.h"

namespace humus::client {

Status AttemptResult::record(breaker::Outcome outcome, breaker::Position* after) const {
  const bool slow = slow_call_duration && clock->now() - started > *slow_call_duration;
  Status st = breaker->record(permit, outcome, after, slow);
  metrics->outcome(st.ok() ? outcome : breaker::Outcome::kFailure);
  return st;
}

}  // namespace humus::client
