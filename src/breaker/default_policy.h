// The built-in trip/probe policy (docs/settings.md §3 defaults), visible inside breaker/ so the Breaker can call it
// directly instead of through the virtual interface and a Result on every result it records.
#pragma once

#include "breaker/policy.h"

namespace humus::breaker {

class DefaultPolicy final : public Policy {
 public:
  explicit DefaultPolicy(const DefaultPolicyParams& params) : params_(params) {}

  Result<bool> trip(const Counts& counts) const override { return trips(counts); }
  Result<ProbeDecision> probe(const Counts& counts) const override { return decide(counts); }

  // consecutive_failures == 0 turns the streak rule off (it would otherwise open on any result).
  bool trips(const Counts& counts) const {
    if (params_.consecutive_failures > 0 && counts.consecutive_failures >= params_.consecutive_failures) {
      return true;
    }
    if (counts.window_results < params_.min_results) return false;
    const double results = static_cast<double>(counts.window_results);
    if (static_cast<double>(counts.window_failures) >= params_.failure_rate * results) return true;
    return params_.slow_call_rate && static_cast<double>(counts.window_slow) >= *params_.slow_call_rate * results;
  }

  // With the slow-call rule on, a slow probe says the dependency is not back yet, as a failed one does.
  ProbeDecision decide(const Counts& counts) const {
    if (counts.failures > 0) return ProbeDecision::kReopen;
    if (params_.slow_call_rate && counts.slow_results > 0) return ProbeDecision::kReopen;
    if (counts.successes >= params_.successes_to_close) return ProbeDecision::kClose;
    return ProbeDecision::kContinue;
  }

  const DefaultPolicyParams& params() const { return params_; }

 private:
  const DefaultPolicyParams params_;
};

}  // namespace humus::breaker
