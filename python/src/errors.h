// humus_http._native, errors: the exception a Python callback raised, kept for the call it ends; what a
// failed C call reported (ErrorInfo), and the Failure raised for one. ErrorInfo and Failure are registered on
// the module by register_errors (errors.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "handles.h"
#include "humus_http.h"
#include "native.h"

namespace humus_py {

// A callback that raises stores its exception on the thread that ran it and returns a non-OK status; the
// call then ends with HUMUS_E_CALLBACK on that same thread, which takes the exception back.
//
// GIL held, a Python error set: keeps the first exception of the call (a later one, e.g. a breaker policy
// raising after the classifier did, is dropped), with its traceback.
void store_callback_exception();

// The exception stored on this thread (an owned reference), or null; the slot is left empty. No GIL needed.
PyObject* take_callback_exception();

// What a humus_error said, copied out (the error is freed at once). `exception` is the Python exception a
// callback raised when the status is HUMUS_E_CALLBACK, else None.
struct ErrorInfo {
  int32_t status = 0;
  std::string status_name;
  std::string message;
  int32_t attempts = 0;
  std::vector<std::string> fields;
  int64_t retry_after_ms = 0;
  // How long the call took on the runtime's clock (docs/testing-kit.md §16.1), in microseconds
  // (Runtime::now_us); -1 when the error did not come from a call (settings, a request refused before it was
  // sent).
  int64_t elapsed_us = -1;
  py::object exception = py::none();
  // The error itself, kept for what is rendered only when asked for: its decision trace (trace_json()).
  std::shared_ptr<const humus_error> error;
  // The failed call's decision trace as JSON (humus_error_trace, docs/trace.md §20); "[]" without an error.
  std::string trace_json() const;
};

// GIL held. `err` is null for the few functions without one, whose status says everything (the header
// gives the reason beside each): the message is then the status's name.
ErrorInfo make_error(humus_status status, ErrorPtr err, PyObject* callback_exception);

// Raised by the functions that build things (runtime, client, request); humus_http turns it into the
// matching UpstreamError. Its single argument is an ErrorInfo.
struct Failure {
  ErrorInfo info;
};

// Throws Failure for a failed C call (takes `err`, which may be null); GIL held when it is translated.
[[noreturn]] void fail(humus_status status, ErrorPtr err);

}  // namespace humus_py
