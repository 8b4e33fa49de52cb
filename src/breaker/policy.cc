#include "breaker/policy.h"

#include <memory>

#include "breaker/default_policy.h"

namespace humus::breaker {

const char* state_name(State state) {
  switch (state) {
    case State::kClosed:
      return "closed";
    case State::kOpen:
      return "open";
    case State::kHalfOpen:
      return "half_open";
  }
  return "unknown";
}

std::shared_ptr<const Policy> make_default_policy(const DefaultPolicyParams& params) {
  return std::make_shared<const DefaultPolicy>(params);
}

}  // namespace humus::breaker
