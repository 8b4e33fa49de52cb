// Where an attempt's result goes once it is known: the breaker's verdict on the attempt's permit and the
// humus.circuit.calls metric. The one place both are recorded, whether the attempt ended inside its call
// (Call::count) or its result waited for the end of a streamed body (ResponseStream, docs/bodies.md §7), so a
// buffered and a streamed response of the same attempt count the same.
#pragma once

#include <optional>

#include "breaker/breaker.h"
#include "breaker/outcome.h"
#include "common/clock.h"
#include "common/status.h"
#include "telemetry/metrics.h"

namespace humus::client {

struct AttemptResult {
  breaker::Breaker* breaker = nullptr;
  telemetry::ClientMetrics* metrics = nullptr;
  breaker::Permit permit;
  // When the attempt was let go, and breaker.slow_call_duration: an attempt that ran longer until its result is
  // recorded (to a streamed body's end) is slow as well (docs/breaker.md §9.3a).
  Clock* clock = nullptr;
  Instant started{};
  std::optional<Duration> slow_call_duration;

  // Tells the breaker `outcome` and counts it. A breaker policy that fails made the breaker count a failure
  // (docs/breaker.md §9.4), and the metric says so too; its status is returned, for a call to end with.
  // `after`, when given, receives where the breaker stands once the result was counted (the decision trace).
  Status record(breaker::Outcome outcome, breaker::Position* after = nullptr) const;
};

}  // namespace humus::client
