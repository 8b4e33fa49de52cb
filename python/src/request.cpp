// humus_http._native, requests (request.h): a call's arguments checked and taken (prepare), and the C
// request built from them (build).
#include "request.h"

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "errors.h"
#include "handles.h"
#include "humus_http.h"
#include "request_callbacks.h"

namespace humus_py {

namespace {

// GIL held: a UTF-8 view of a str that is part of a request; a TypeError naming it for another type. A NUL
// is refused as the core refuses CR and LF (HUMUS_E_INVALID_ARGUMENT naming `field`, before any I/O): a C
// string would silently end there, and "/x\0evil" go out as "/x". `describe()` gives its name, called only to
// report an error (a header's name built for every value of every call cost an allocation each).
template <typename Describe>
const char* utf8(PyObject* o, const char* field, const Describe& describe) {
  if (!PyUnicode_Check(o)) {
    throw py::type_error(std::string(describe()) + " must be str, not " + Py_TYPE(o)->tp_name);
  }
  Py_ssize_t size = 0;
  const char* s = PyUnicode_AsUTF8AndSize(o, &size);
  if (s == nullptr) throw py::error_already_set();
  if (std::char_traits<char>::length(s) != static_cast<size_t>(size)) {
    ErrorInfo info;
    info.status = HUMUS_E_INVALID_ARGUMENT;
    info.status_name = humus_status_name(HUMUS_E_INVALID_ARGUMENT);
    info.message = std::string(describe()) + " contains a NUL character";
    info.fields = {field};
    throw Failure{std::move(info)};
  }
  return s;
}
const char* utf8(PyObject* o, const char* field) {
  return utf8(o, field, [field] { return field; });
}

}  // namespace

Prepared prepare(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
                 int32_t retry, int32_t follow, int64_t timeout_ms, py::handle context, py::handle hooks) {
  Prepared p;
  if (!hooks.is_none()) {
    if (!PyTuple_Check(hooks.ptr()) || PyTuple_GET_SIZE(hooks.ptr()) != 2) {
      throw py::type_error("hooks must be a (before, after) tuple or None");
    }
    const py::tuple t = py::reinterpret_borrow<py::tuple>(hooks);
    p.hooks.reset(new PyAttemptHooks{t[0], t[1]});
  }
  // Pointers into the caller's str objects, which outlive the call (pybind11's const char* caster copied
  // each into a std::string first).
  p.method = utf8(method.ptr(), "method");
  p.url = utf8(url.ptr(), "url");
  p.retry = retry;
  p.follow = follow;
  p.timeout_ms = timeout_ms;
  if (!context.is_none()) {
    if (!PyTuple_Check(context.ptr()) || PyTuple_GET_SIZE(context.ptr()) != 5) {
      throw py::type_error("context must be a tuple of 5 strings or None");
    }
    static const char* const kParts[] = {"context traceparent", "context tracestate", "context baggage",
                                         "context X-Request-ID", "context Authorization"};
    for (Py_ssize_t i = 0; i < 5; ++i) {
      PyObject* part = PyTuple_GET_ITEM(context.ptr(), i);
      if (part == Py_None) continue;
      p.context[i] = utf8(part, "context", [i] { return kParts[i]; });
    }
    p.keep.push_back(py::reinterpret_borrow<py::object>(context));
    p.has_context = true;
  }
  if (!headers.is_none()) {
    if (!PyList_Check(headers.ptr()))
      throw py::type_error("headers must be a list of (name, value) tuples");
    const Py_ssize_t n = PyList_GET_SIZE(headers.ptr());
    p.headers.reserve(static_cast<size_t>(n));
    p.keep.reserve(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* pair = PyList_GET_ITEM(headers.ptr(), i);
      if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        throw py::type_error("headers must be a list of (name, value) tuples");
      }
      p.keep.push_back(py::reinterpret_borrow<py::object>(pair));  // keeps its name and value alive
      const char* name = utf8(PyTuple_GET_ITEM(pair, 0), "headers", [] { return "a header name"; });
      // None: the request sends no header of that name (humus_request_remove_header).
      PyObject* v = PyTuple_GET_ITEM(pair, 1);
      const char* value = v == Py_None ? nullptr
                                       : utf8(v, name, [name] { return std::string("header ") + name + ": the value"; });
      p.headers.emplace_back(name, value);
    }
  }
  if (PyTuple_Check(body.ptr())) {
    if (PyTuple_GET_SIZE(body.ptr()) != 3) throw py::type_error("a body reader is (read, rewind, length)");
    const py::tuple t = py::reinterpret_borrow<py::tuple>(body);
    p.reader_length = t[2].cast<int64_t>();
    p.reader_rewinds = !t[1].is_none();
    p.reader.reset(new PyBodyReader{t[0], t[1]});
  } else if (!body.is_none()) {
    char* data = nullptr;
    Py_ssize_t len = 0;
    if (PyBytes_AsStringAndSize(body.ptr(), &data, &len) != 0) throw py::error_already_set();
    p.keep.push_back(py::reinterpret_borrow<py::object>(body));
    p.body = data;
    p.body_len = static_cast<size_t>(len);
    p.has_body = true;
  }
  if (!key.is_none()) {
    p.key = utf8(key.ptr(), "idempotency_key");
    p.keep.push_back(py::reinterpret_borrow<py::object>(key));
  }
  return p;
}

Built build(const Prepared& p) {
  Built b;
  humus_request* raw = nullptr;
  humus_error* err = nullptr;
  auto failed = [&](humus_status st) {
    b.req.reset();
    b.status = st;
    b.err.reset(err);
    return std::move(b);
  };
  humus_status st = humus_request_new(p.method, p.url, &raw, &err);
  if (st != HUMUS_OK) return failed(st);
  b.req.reset(raw);
  for (const auto& [name, value] : p.headers) {
    st = value != nullptr ? humus_request_set_header(b.req.get(), name, value, &err)
                          : humus_request_remove_header(b.req.get(), name, &err);
    if (st != HUMUS_OK) return failed(st);
  }
  if (p.has_body && (st = humus_request_set_body(b.req.get(), p.body, p.body_len)) != HUMUS_OK)
    return failed(st);
  if (p.reader) {
    humus_body_reader reader = HUMUS_BODY_READER_INIT;
    reader.user_data = p.reader.get();
    reader.length = p.reader_length;
    reader.read = body_read_trampoline;
    reader.rewind = p.reader_rewinds ? body_rewind_trampoline : nullptr;
    reader.destroy = destroy_body_reader;
    if ((st = humus_request_set_body_reader(b.req.get(), &reader, &err)) != HUMUS_OK) return failed(st);
    (void)p.reader.release();  // the request's now: its destroy frees it
  }
  if (p.hooks) {
    humus_attempt_hooks hooks = HUMUS_ATTEMPT_HOOKS_INIT;
    hooks.user_data = p.hooks.get();
    hooks.before = before_trampoline;
    hooks.after = after_trampoline;
    hooks.destroy = destroy_attempt_hooks;
    if ((st = humus_request_set_attempt_hooks(b.req.get(), &hooks, &err)) != HUMUS_OK) return failed(st);
    (void)p.hooks.release();  // the request's (and its calls') now: destroy frees it
  }
  if (p.key != nullptr && (st = humus_request_set_idempotency_key(b.req.get(), p.key, &err)) != HUMUS_OK) {
    return failed(st);
  }
  if (p.retry != HUMUS_RETRY_MODE_DEFAULT &&
      (st = humus_request_set_retry(b.req.get(), p.retry, &err)) != HUMUS_OK) {
    return failed(st);
  }
  if (p.follow != -1 &&
      (st = humus_request_set_follow_redirects(b.req.get(), p.follow, &err)) != HUMUS_OK) {
    return failed(st);
  }
  // 0: none given; the core refuses a negative one.
  if (p.timeout_ms != 0 && (st = humus_request_set_timeout_ms(b.req.get(), p.timeout_ms, &err)) != HUMUS_OK) {
    return failed(st);
  }
  if (p.has_context &&
      (st = humus_request_set_context(b.req.get(), p.context[0], p.context[1], p.context[2], p.context[3],
                                      p.context[4], &err)) != HUMUS_OK) {
    return failed(st);
  }
  return b;
}

RequestPtr build_or_fail(const Prepared& p) {
  Built b = build(p);
  if (b.status != HUMUS_OK) fail(b.status, std::move(b.err));
  return std::move(b.req);
}

}  // namespace humus_py
