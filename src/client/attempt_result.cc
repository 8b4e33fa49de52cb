#include "client/attempt_result.h"

namespace humus::client {

Status AttemptResult::record(breaker::Outcome outcome, breaker::Position* after) const {
  Status st = breaker->record(permit, outcome, after);
  metrics->outcome(st.ok() ? outcome : breaker::Outcome::kFailure);
  return st;
}

}  // namespace humus::client
