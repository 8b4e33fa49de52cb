// A call's decision trace as the JSON of docs/trace.md: what humus_response_trace and humus_error_trace hand
// out, and what every binding parses (so each language reports the same reasoning).
#pragma once

#include <string>

#include "client/decision_trace.h"

namespace humus::capi {

// `trace` may be null (a call that ended before it started): "[]".
std::string trace_json(const client::DecisionTrace* trace);

}  // namespace humus::capi
