// When a breaker opens and closes (docs/breaker.md §9.3): a policy over the counts, built-in or supplied by code.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "common/status.h"

namespace humus::breaker {

// The numbers of State and ProbeDecision are the C ABI's HUMUS_CIRCUIT_* and HUMUS_PROBE_*
// (the C ABI's abi_numbers.cc checks), so the counts and a C policy's answer convert by a cast.
enum class State : int32_t {
  kClosed = 0,
  kOpen = 1,
  kHalfOpen = 2,
};

const char* state_name(State state);  // "closed", "open", "half_open"

// Counts since the current state began, plus the last `window` results (closed state only keeps a window).
// A result is also slow when its attempt took longer than breaker.slow_call_duration (docs/breaker.md §9.3a):
// slow is counted besides success or failure, never instead.
struct Counts {
  State state = State::kClosed;
  uint64_t successes = 0;
  uint64_t failures = 0;
  uint64_t consecutive_successes = 0;
  uint64_t consecutive_failures = 0;
  uint64_t timed_out_probes = 0;
  uint32_t window_results = 0;
  uint32_t window_failures = 0;
  uint64_t slow_results = 0;  // slow results since the state began
  uint32_t window_slow = 0;   // slow results among the window's
};

enum class ProbeDecision : int32_t {
  kContinue = 0,
  kClose = 1,
  kReopen = 2,
};

// Runs under the breaker's lock: must be fast, thread-safe, and must not call the client.
class Policy {
 public:
  virtual ~Policy() = default;
  // In closed, after each result: true opens the breaker.
  virtual Result<bool> trip(const Counts& counts) const = 0;
  // In half-open, after each probe's result.
  virtual Result<ProbeDecision> probe(const Counts& counts) const = 0;
};

// The built-in policy's parameters (JSON "trip" and "probe"; docs/settings.md §3).
struct DefaultPolicyParams {
  uint64_t consecutive_failures = 5;  // open after this many failures in a row ...
  double failure_rate = 0.5;          // ... or once this share of the window failed ...
  uint32_t min_results = 20;          // ... with at least this many results in it
  uint64_t successes_to_close = 3;    // successful probes that close; any failed probe reopens
  // Open once this share of the window was slow (with at least min_results in it), and reopen on a slow
  // probe. Unset: slow results open nothing.
  std::optional<double> slow_call_rate;
};

std::shared_ptr<const Policy> make_default_policy(const DefaultPolicyParams& params);

}  // namespace humus::breaker
