// humus_response_trace and humus_error_trace: a call's decision trace, rendered as JSON when asked for
// (capi/trace_json.h), so a call whose trace nobody reads pays only for recording it.
#include "capi/client_capi.h"
#include "capi/error.h"
#include "capi/guard.h"
#include "capi/text_out.h"
#include "capi/trace_json.h"

using humus::Code;
using humus::Status;
using humus::capi::bad_handle;
using humus::capi::guard;
using humus::capi::live;
using humus::capi::report;
using humus::capi::text_out;
using humus::capi::trace_json;

extern "C" {

HUMUS_API humus_status humus_response_trace(const humus_response* r, char** json, size_t* len, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(r) == nullptr) return bad_handle("humus_response_trace", "r", err);
    if (json == nullptr) {
      return report(Status(Code::kInvalidArgument, "humus_response_trace: json is NULL", {"json"}), err);
    }
    return text_out(trace_json(r->response.trace.get()), json, len);
  });
}

HUMUS_API humus_status humus_error_trace(const humus_error* e, char** json, size_t* len) {
  return guard(nullptr, [&]() -> humus_status {
    if (json == nullptr) return HUMUS_E_INVALID_ARGUMENT;
    if (live(e) == nullptr) return HUMUS_E_MISUSE;
    return text_out(trace_json(e->trace.get()), json, len);
  });
}

}  // extern "C"
