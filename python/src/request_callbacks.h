// humus_http._native, the callbacks a request carries: its body read from Python (content= an iterator of
// bytes or a binary file) and the attempt hooks (event_hooks per attempt), C trampolines into the Python
// adapters of humus_http, and the owners that free them until the request takes them.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>

#include "humus_http.h"
#include "native.h"

namespace humus_py {

// user_data of a request body streamed from Python (content= an iterator of bytes or a binary file, adapted
// by humus_http._response): `read(cap)` returns at most cap bytes (b"" at the end), `rewind()` starts over.
// The callbacks run on the thread driving the attempt with the GIL released by the call, and take it only
// for the Python call; an exception they raise ends the attempt with HUMUS_E_CALLBACK and is re-raised.
struct PyBodyReader {
  py::object read;
  py::object rewind;  // None: not replayable
};

humus_status body_read_trampoline(void* user_data, void* buf, size_t cap, size_t* n);
humus_status body_rewind_trampoline(void* user_data);

// The reader's destroy (and its owner's deleter before the request takes it): drops the callables with the
// GIL, or leaks them once the interpreter is finalizing.
void destroy_body_reader(void* user_data);

struct BodyReaderDeleter {
  void operator()(PyBodyReader* r) const noexcept { destroy_body_reader(r); }
};
using BodyReaderPtr = std::unique_ptr<PyBodyReader, BodyReaderDeleter>;

// user_data of one call's attempt hooks (humus_request_set_attempt_hooks), from humus_http._client's adapter:
// `before(method, url, attempt, headers)` returns the (name, value) pairs to set on this attempt, or None;
// `after(attempt, status, headers)` records what the attempt brought (status 0: no response). They run on the
// thread that drives the attempt with the GIL released by the call, and take it for the Python call. An
// exception from `before` ends the call with HUMUS_E_CALLBACK and is re-raised (with_python); `after` only
// records, and the adapter runs a retried attempt's response hooks from the next `before`, so every hook's
// exception ends the call at once.
struct PyAttemptHooks {
  py::object before;
  py::object after;
};

humus_status before_trampoline(void* user_data, humus_attempt_request* r);
void after_trampoline(void* user_data, const humus_attempt* a);
void destroy_attempt_hooks(void* user_data);

struct AttemptHooksDeleter {
  void operator()(PyAttemptHooks* h) const noexcept { destroy_attempt_hooks(h); }
};
using AttemptHooksPtr = std::unique_ptr<PyAttemptHooks, AttemptHooksDeleter>;

}  // namespace humus_py
