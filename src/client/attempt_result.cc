#include "client/attempt_result.h"

namespace humus::client {

Status AttemptResult::record(breaker::Outcome outcome) const {
  Status st = breaker->record(permit, outcome);
  metrics->outcome(st.ok() ? outcome : breaker::Outcome::kFailure);
  return st;
}

}  // namespace humus::client
