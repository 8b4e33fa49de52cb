// What a call reads from its client, and nothing more (docs/retries.md §6): the policies its state machine
// composes and the facts it needs. The client owns every one of them and outlives its calls, so a Call holds
// this by reference instead of reaching into the client as a friend.
#pragma once

#include <string>

#include "breaker/breaker.h"
#include "bulkhead/bulkhead.h"
#include "classify/classification.h"
#include "client/origin_spelling.h"
#include "common/clock.h"
#include "common/random.h"
#include "retry/backoff.h"
#include "retry/budget.h"
#include "retry/latency_tracker.h"
#include "settings/settings.h"
#include "telemetry/metrics.h"
#include "telemetry/telemetry.h"
#include "transport/url.h"

namespace humus::client {

struct CallEnv {
  Clock& clock;
  Random& random;
  telemetry::Telemetry& telemetry;  // read per call: its span sink may be replaced at any time
  const bool inject_faults;         // the runtime's failure injection (docs/failure-injection.md §14)
  const settings::Settings& settings;
  const transport::Origin& origin;
  const OriginSpelling& spelling;
  const std::string& fault_point;  // the origin's name as an injection point
  const classify::Classifier& classifier;
  const retry::Backoff& backoff;
  const Duration max_retry_after;
  telemetry::ClientMetrics& metrics;
  breaker::Breaker& breaker;
  retry::Budget& budget;
  bulkhead::Bulkhead& bulkhead;  // acquired by the drivers, each its own way, when the call asks (Step::kAcquire)
  // Hedging (docs/retries.md §6.8): settings.hedge's delay, read once; unset: no hedging. The latencies of the
  // origin's successful attempts, recorded only while it is set.
  const std::optional<settings::HedgeDelay>& hedge_delay;
  retry::LatencyTracker& latency;
};

}  // namespace humus::client
