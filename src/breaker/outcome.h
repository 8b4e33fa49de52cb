// What an admitted attempt's result means to the breaker (docs/retries.md §5). One type for the whole path: the
// classifier's verdict, what the breaker counts, and the humus.circuit.calls series it is counted in. Its
// values are the C ABI's HUMUS_BREAKER_*, so a C classifier's answer converts by a cast.
#pragma once

#include <cstdint>

#include "humus_http.h"

namespace humus::breaker {

enum class Outcome : int32_t {
  kSuccess = HUMUS_BREAKER_SUCCESS,
  kFailure = HUMUS_BREAKER_FAILURE,
  kIgnored = HUMUS_BREAKER_IGNORED,  // says nothing about the dependency (e.g. the caller cancelled)
};

const char* outcome_name(Outcome outcome);  // "success", "failure", "ignored"

}  // namespace humus::breaker
