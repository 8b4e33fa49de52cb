// Readiness (docs/upstreams.md §15.2): a JSON report of every client's breaker. Overall "ok" when every breaker is closed,
// "degraded" otherwise — never "unavailable": a dependency being down does not make this service unready.
#pragma once

#include <string>
#include <vector>

#include "telemetry/metrics.h"

namespace humus::upstreams {

struct ReadinessEntry {
  std::string name;  // the upstream's name; empty for a client outside a registry (then not written)
  telemetry::BreakerView breaker;
};

// {"status": "ok"|"degraded", "clients": [{["name"], "origin", "state", "retry_after_ms", "counts": {...},
//  ["processes"], ["bulkhead_limit"]}]}
std::string readiness_json(const std::vector<ReadinessEntry>& entries);

}  // namespace humus::upstreams
