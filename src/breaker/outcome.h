// What an admitted attempt's result means to the breaker (docs/retries.md §5). One type for the whole path: the
// classifier's verdict, what the breaker counts, and the humus.circuit.calls series it is counted in. Its
// values are the pinned numbers of the C ABI's HUMUS_BREAKER_* (the C ABI's abi_numbers.cc checks), so a C
// classifier's answer converts by a cast.
#pragma once

#include <cstdint>

namespace humus::breaker {

enum class Outcome : int32_t {
  kSuccess = 1,
  kFailure = 2,
  kIgnored = 3,  // says nothing about the dependency (e.g. the caller cancelled)
};

const char* outcome_name(Outcome outcome);  // "success", "failure", "ignored"

}  // namespace humus::breaker
