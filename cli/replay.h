#pragma once
// humus-http replay (docs/replay.md §21): recorded traffic run through a client on a virtual clock, to see what
// a settings file would have done with it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replay_traffic.h"

namespace humus::cli::replay {

struct Transition {
  int64_t ms = 0;  // on the replay's clock, from its start
  int32_t from = 0;
  int32_t to = 0;  // HUMUS_CIRCUIT_*
};

// What one settings file made of the traffic.
struct Outcome {
  int64_t calls = 0;
  int64_t ok = 0;             // calls answered 2xx
  int64_t answered_else = 0;  // calls answered with another status
  int64_t failed = 0;         // calls that ended with no answer: a transport error, a timeout
  int64_t rejected_calls = 0;  // calls ended by the open breaker (HUMUS_E_REJECTED)
  int64_t bulkhead_full = 0;   // calls turned away by the bulkhead
  int64_t attempts = 0;        // attempts the breaker counted (humus_response_attempts, humus_error_attempts)
  int64_t wire_requests = 0;   // the traces' wire_sends: what the dependency saw
  int64_t retries = 0;         // trace records decided "again"
  int64_t throttled = 0;       // ... "throttled": retries the budget refused
  int64_t rejected = 0;        // ... "rejected": attempts the breaker turned away
  int64_t max_in_flight = 0;   // the most calls in flight at once
  int64_t end_ms = 0;          // when the last call ended
  std::vector<int64_t> latency_ms;  // each call's, from its start to its outcome, ascending
  std::vector<Transition> transitions;

  double amplification() const {
    return calls == 0 ? 0 : static_cast<double>(wire_requests) / static_cast<double>(calls);
  }
  // Nearest rank: the smallest latency at or above `p` percent of the calls.
  int64_t percentile_ms(double p) const;
};

struct Failure {
  std::string message;
  int exit_code;
};

// Runs `traffic` through a client of `settings_json` (a settings object; a missing base_url is filled in) on a
// virtual clock seeded with `seed`.
std::optional<Failure> simulate(const Traffic& traffic, const std::string& settings_json, uint64_t seed,
                                Outcome& out);

// humus-http replay ARGS... (argv after "replay"); returns the exit status.
int run_replay(const std::vector<std::string>& args);

}  // namespace humus::cli::replay
