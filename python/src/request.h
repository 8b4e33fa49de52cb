// humus_http._native, requests: a call's Python arguments checked and taken as pointers into the Python
// objects (prepare, GIL held), and the C request built from them (build, no GIL needed).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "errors.h"
#include "handles.h"
#include "humus_http.h"
#include "request_callbacks.h"

namespace humus_py {

// The parts of a request as pointers into Python objects it holds, so that the C request can be built
// without the GIL: str and bytes are immutable, and a str's UTF-8 form lives as long as the str.
struct Prepared {
  const char* method = nullptr;  // the caller's arguments, alive for the whole call
  const char* url = nullptr;
  std::vector<std::pair<const char*, const char*>> headers;  // a null value: remove that header
  std::vector<py::object> keep;  // released with the GIL held (Prepared lives in a frame that holds it)
  const char* body = nullptr;
  size_t body_len = 0;
  bool has_body = false;
  // A streamed body: (read, rewind or None, length or -1) from Python. Owned here until build() hands it to
  // the request (mutable: build takes a const Prepared, and is its only taker).
  mutable BodyReaderPtr reader;
  bool reader_rewinds = false;
  int64_t reader_length = -1;
  // The call's attempt hooks: (before, after) from Python, owned here until build() hands them to the
  // request.
  mutable AttemptHooksPtr hooks;
  const char* key = nullptr;
  int32_t retry = HUMUS_RETRY_MODE_DEFAULT;
  int32_t follow = -1;  // follow_redirects: -1 not given (the core follows within the origin), else 0 or 1
  int64_t timeout_ms = 0;
  bool has_context = false;
  // traceparent, tracestate, baggage, X-Request-ID, Authorization of the request being served (docs/telemetry.md §12)
  const char* context[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
};

// GIL held: checks the Python types (TypeError, or Failure HUMUS_E_INVALID_ARGUMENT for a NUL) and takes the
// pointers.
Prepared prepare(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
                 int32_t retry, int32_t follow, int64_t timeout_ms, py::handle context, py::handle hooks);

// The C request; no GIL needed. On failure `req` is empty and `status`/`err` say why.
struct Built {
  RequestPtr req;
  humus_status status = HUMUS_OK;
  ErrorPtr err;
};
Built build(const Prepared& p);

// GIL held: the C request, or Failure.
RequestPtr build_or_fail(const Prepared& p);

}  // namespace humus_py
