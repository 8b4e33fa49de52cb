// humus_http._native, responses: a Response over a humus_response (whole, or streamed by Client.open and
// Client.submit_open), and the outcome of a call as a Python object. Registered on the module by
// register_response (response.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "errors.h"
#include "handles.h"
#include "humus_http.h"
#include "native.h"

namespace humus_py {

class ClientHandle;
class Bridge;

// Loop thread, no GIL: starts reading the body of a response of Client.submit_open ahead
// (humus_response_read_ahead) as its headers arrive, and returns its key for the Response, or 0 with *status
// and *err set (the caller frees resp).
uint64_t read_ahead(humus_response* resp, humus_status* status, humus_error** err);
// GIL held: no ready of the body read ahead under `key` wakes anyone any more (before its response is freed);
// a reader waiting is woken now.
void forget_ahead(uint64_t key);

// A header as (name, value): values are bytes on the wire, and latin-1 maps each to one code point, as httpx does.
inline py::tuple header_pair(const char* name, const char* value) {
  PyObject* v = PyUnicode_DecodeLatin1(value, static_cast<Py_ssize_t>(std::char_traits<char>::length(value)),
                                       "strict");
  if (v == nullptr) throw py::error_already_set();
  return py::make_tuple(py::str(name), py::reinterpret_steal<py::object>(v));
}

// A response: whole in memory, or for Client.open its body still on its connection (read() hands out the
// next bytes), or for Client.submit_open on its connection, read ahead by the library from its headers on and
// copied out with take(). Read-only accessors; close() frees it early. A streamed one keeps its client alive:
// the C ABI wants it freed before its client.
class Response {
 public:
  Response(humus_response* r, int64_t elapsed_us, std::shared_ptr<ClientHandle> client = nullptr,
           uint64_t ahead = 0)
      : client_(std::move(client)), r_(r), elapsed_us_(elapsed_us), ahead_(ahead) {}
  ~Response() {
    if (ahead_ != 0) forget_ahead(ahead_);
    // Closing a body may close its connection; the last share of a client waits for its calls.
    if (r_ || client_) {
      without_gil([this] {
        r_.reset();
        client_.reset();
      });
    }
  }
  const humus_response* get() const {
    if (!r_) throw std::runtime_error("the response is closed");
    return r_.get();
  }
  int32_t status() const { return humus_response_status(get()); }
  int32_t attempts() const { return humus_response_attempts(get()); }
  // The call's decision trace as JSON (humus_response_trace, docs/trace.md §20).
  std::string trace_json() const;
  int64_t elapsed_us() const { return elapsed_us_; }
  std::string http_version() const { return humus_response_http_version(get()); }
  std::string url() const { return humus_response_url(get()); }
  // The status line's reason phrase as sent (bytes: not necessarily UTF-8), or None over HTTP/2, which has none.
  py::object reason() const {
    const humus_response* r = get();
    if (std::string_view(humus_response_http_version(r)) == "2") return py::none();
    return py::bytes(humus_response_reason(r));
  }
  // The redirects the call followed, oldest first: (3xx status, URL of the request that got it, its reason phrase
  // as sent or None over HTTP/2, its HTTP version ("1.1", "2"), its headers as headers() gives them).
  py::list redirects() const {
    const humus_response* r = get();
    const size_t n = humus_response_redirect_count(r);
    py::list out(n);
    for (size_t i = 0; i < n; ++i) {
      int32_t status = 0;
      const char* url = nullptr;
      if (humus_response_redirect_at(r, i, &status, &url) != HUMUS_OK) {
        throw std::runtime_error("redirect index");
      }
      const char* version = humus_response_redirect_http_version(r, i);
      py::object reason = py::none();
      if (std::string_view(version) != "2") reason = py::bytes(humus_response_redirect_reason(r, i));
      const size_t m = humus_response_redirect_header_count(r, i);
      py::list headers(m);
      for (size_t j = 0; j < m; ++j) {
        const char* name = nullptr;
        const char* value = nullptr;
        if (humus_response_redirect_header_at(r, i, j, &name, &value) != HUMUS_OK) {
          throw std::runtime_error("redirect header index");
        }
        headers[j] = header_pair(name, value);
      }
      out[i] = py::make_tuple(status, py::str(url), std::move(reason), py::str(version), std::move(headers));
    }
    return out;
  }
  py::bytes body() const {
    const void* data = nullptr;
    size_t len = 0;
    humus_error* err = nullptr;
    const humus_status st = humus_response_body(const_cast<humus_response*>(get()), &data, &len, &err);
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    return py::bytes(static_cast<const char*>(data), len);
  }
  py::list headers() const {
    const humus_response* r = get();
    const size_t n = humus_response_header_count(r);
    py::list out(n);
    for (size_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      const char* value = nullptr;
      if (humus_response_header_at(r, i, &name, &value) != HUMUS_OK) throw std::runtime_error("header index");
      out[i] = header_pair(name, value);
    }
    return out;
  }
  // Up to `cap` next bytes of the body (b"" at its end), read without the GIL straight into the bytes object
  // returned: until then it is this thread's alone, so no copy and no zero-fill (of 64 KiB per read) is needed.
  py::bytes read(size_t cap) {
    humus_response* r = const_cast<humus_response*>(get());
    if (cap == 0) cap = 64 * 1024;
    PyObject* out = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(cap));
    if (out == nullptr) throw py::error_already_set();
    auto owned = py::reinterpret_steal<py::bytes>(out);
    size_t n = 0;
    humus_error* err = nullptr;
    humus_status st = HUMUS_OK;
    {
      py::gil_scoped_release nogil;
      st = humus_response_read(r, PyBytes_AS_STRING(out), cap, &n, &err);
    }
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    if (n == cap) return owned;
    out = owned.release().ptr();
    if (_PyBytes_Resize(&out, static_cast<Py_ssize_t>(n)) != 0) throw py::error_already_set();  // out freed
    return py::reinterpret_steal<py::bytes>(out);
  }
  // The rest of the body into memory, without the GIL (within max_response_body).
  py::bytes read_rest() {
    humus_response* r = const_cast<humus_response*>(get());
    const void* data = nullptr;
    size_t len = 0;
    humus_error* err = nullptr;
    humus_status st = HUMUS_OK;
    {
      py::gil_scoped_release nogil;
      st = humus_response_body(r, &data, &len, &err);
    }
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    return py::bytes(static_cast<const char*>(data), len);
  }
  void close() {
    if (ahead_ != 0) forget_ahead(std::exchange(ahead_, 0));
    without_gil([this] {
      r_.reset();
      client_.reset();
    });
  }
  // A body of Client.submit_open, read ahead: up to `cap` next bytes copied out of the library's ring
  // (humus_response_take, which never waits), b"" at its end, or None when none are in yet: then wait().
  py::object take(size_t cap);
  // After take() found nothing: `future` (an asyncio.Future of `bridge`'s loop) gets None through the bridge
  // once a take may find something. False when that moment came already (take again). One reader at a time.
  bool wait(const std::shared_ptr<Bridge>& bridge, py::object future);
  // The reader waiting is done waiting for a batch (humus_response_hurry): what came wakes it now.
  void hurry() {
    if (r_) humus_response_hurry(r_.get());
  }

 private:
  std::shared_ptr<ClientHandle> client_;  // streamed only; declared first so the response goes first
  ResponsePtr r_;
  int64_t elapsed_us_;  // the call's duration on the runtime's clock (Runtime::now_us)
  uint64_t ahead_;      // Client.submit_open: its body's key in the read-ahead table (response.cpp), else 0
};

// GIL held: the outcome of a call as a Python object, a Response or an ErrorInfo. `elapsed_us`: the call's
// duration on the runtime's clock (Runtime::now_us).
py::object outcome(humus_status status, humus_response* resp, humus_error* err, PyObject* callback_exception,
                   int64_t elapsed_us);

}  // namespace humus_py
