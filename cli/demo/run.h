#pragma once
// What one demo run measured: per second and per phase, as the timeline, the summary and the SVG show it.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "demo/schedule.h"

namespace humus::cli::demo {

// Calls counted in the second they ended (a call ending after its second's line was printed counts in the
// next line, so the lines and the summary always agree).
struct Second {
  int64_t calls = 0;      // calls that ended
  int64_t ok = 0;         // ... with a 2xx
  int64_t failed = 0;     // ... with another status or a transport error (not rejected, not bulkhead full)
  int64_t attempts = 0;   // requests sent for them (humus_response_attempts / humus_error_attempts)
  int64_t retries = 0;    // attempts after each call's first
  int64_t throttled = 0;  // retries the budget refused: the client's humus.retry.decisions{throttled}
  int64_t rejected = 0;   // HUMUS_E_REJECTED: the breaker was open, nothing sent
  int64_t full = 0;       // HUMUS_E_BULKHEAD_FULL
  double budget = 0;      // retry budget tokens at the second's end
  std::vector<int32_t> breaker;  // HUMUS_CIRCUIT_* during the second: the state it began in, then each change
};

struct BreakerChange {
  int64_t ms;  // since the run's start
  int32_t state;
};

struct Run {
  Schedule schedule;
  int32_t rate = 0;
  int32_t max_attempts = 0;  // the client's setting
  double budget_tokens = 0;  // the budget's size
  std::vector<Second> seconds;
  std::vector<BreakerChange> breaker;             // the first entry is the state at 0 ms
  std::array<std::vector<double>, 4> latency_ms;  // per phase (kPhases order), each call's duration
  int64_t unfinished = 0;                         // calls still in flight when the run ended (cancelled)
};

// The states of [from_ms, to_ms): the one in force at from_ms, then each change in the interval.
inline std::vector<int32_t> breaker_states(const std::vector<BreakerChange>& changes, int64_t from_ms,
                                           int64_t to_ms) {
  std::vector<int32_t> states;
  for (const BreakerChange& c : changes) {
    if (c.ms >= to_ms) break;
    if (c.ms <= from_ms && !states.empty()) states.clear();
    states.push_back(c.state);
  }
  return states;
}

}  // namespace humus::cli::demo
