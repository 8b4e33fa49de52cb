// humus_http._native, the callbacks a client's settings carry: the classifier (docs/retries.md §5.3) and
// the breaker policy (docs/breaker.md §9.3), C trampolines into the Python adapters of humus_http. They run
// on whichever thread ends an attempt, with the GIL released by the call, and take it for the Python call; an
// exception they raise ends the call with HUMUS_E_CALLBACK and is re-raised (errors.h).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>

#include "humus_http.h"
#include "native.h"

namespace humus_py {

// The classifier's classify: user_data is a PyCallable (native.h) over the Python adapter.
humus_status classify_trampoline(void* user_data, const humus_attempt* attempt, humus_classification* out);

// The policy adapters take the counts as eight integers.
py::tuple counts_tuple(const humus_breaker_counts* c);

// user_data of a breaker policy: the Python adapters of trip and probe (either may be None when its
// trampoline is not set). Released by destroy_policy.
struct PolicyCallables {
  py::object trip;
  py::object probe;
};

humus_status trip_trampoline(void* user_data, const humus_breaker_counts* counts, int32_t* open);
humus_status probe_trampoline(void* user_data, const humus_breaker_counts* counts, int32_t* decision);
void destroy_policy(void* user_data);

}  // namespace humus_py
