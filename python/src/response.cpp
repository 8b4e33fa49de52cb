// humus_http._native, responses (response.h): a call's outcome, a streamed body's asynchronous reads handed
// to the Bridge, and the Response's Python class.
#include "response.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <utility>
#include <vector>

#include "bridge.h"
#include "errors.h"
#include "handles.h"
#include "humus_http.h"

namespace humus_py {

py::object outcome(humus_status status, humus_response* resp, humus_error* err, PyObject* callback_exception,
                   int64_t elapsed_us) {
  if (status == HUMUS_OK) {
    Py_XDECREF(callback_exception);  // a callback failed yet the call succeeded: nothing to report
    return py::cast(new Response(resp, elapsed_us), py::return_value_policy::take_ownership);
  }
  ResponsePtr drop(resp);
  if (status != HUMUS_E_CALLBACK && callback_exception != nullptr) {
    Py_DECREF(callback_exception);
    callback_exception = nullptr;
  }
  ErrorInfo info = make_error(status, ErrorPtr(err), callback_exception);
  info.elapsed_us = elapsed_us;
  return py::cast(std::move(info));
}

namespace {

// One read_async in flight: what its on_read hands to the bridge.
struct ReadPending {
  std::shared_ptr<Bridge> bridge;
  PyObject* future;  // owned
  ReadBuffer buf;    // lent to the core until read_done runs
};

void read_done(void* user_data, humus_status status, size_t n, humus_error* err) {
  std::unique_ptr<ReadPending> pending(static_cast<ReadPending*>(user_data));
  pending->bridge->push_read(pending->future, status, n, err, std::move(pending->buf));
}

}  // namespace

void Response::read_async(size_t cap, const std::shared_ptr<Bridge>& bridge, py::object future) {
  humus_response* r = const_cast<humus_response*>(get());
  if (cap == 0) cap = 64 * 1024;
  // A buffer still lent to an earlier read is never written here: a new one replaces it (and the core
  // refuses a second read in flight anyway).
  if (!buf_ || buf_->size() < cap || buf_.use_count() > 1) buf_ = std::make_shared<std::vector<char>>(cap);
  auto pending = std::make_unique<ReadPending>(ReadPending{bridge, future.release().ptr(), buf_});
  humus_error* err = nullptr;
  humus_status st = HUMUS_OK;
  {
    py::gil_scoped_release nogil;
    st = humus_response_read_async(r, buf_->data(), cap, read_done, pending.get(), &err);
  }
  if (st != HUMUS_OK) {
    Py_DECREF(pending->future);
    fail(st, ErrorPtr(err));
  }
  (void)pending.release();  // read_done owns it now
}

std::string Response::trace_json() const {
  char* text = nullptr;
  size_t len = 0;
  humus_error* err = nullptr;
  const humus_status st = humus_response_trace(get(), &text, &len, &err);
  if (st != HUMUS_OK) fail(st, ErrorPtr(err));
  std::string out(text, len);
  humus_string_free(text);
  return out;
}

void register_response(py::module_& m) {
  py::class_<Response>(m, "Response", "A whole response (humus_response); close() frees it.")
      .def_property_readonly("status", &Response::status)
      .def_property_readonly("attempts", &Response::attempts)
      .def_property_readonly("elapsed_us", &Response::elapsed_us)
      .def("redirects", &Response::redirects)
      .def_property_readonly("http_version", &Response::http_version)
      .def_property_readonly("url", &Response::url)
      .def_property_readonly("reason", &Response::reason)
      .def("body", &Response::body)
      .def("read", &Response::read, py::arg("cap"))
      .def("read_rest", &Response::read_rest)
      .def("read_async", &Response::read_async, py::arg("cap"), py::arg("bridge"), py::arg("future"))
      .def("headers", &Response::headers)
      .def("trace_json", &Response::trace_json)
      .def("close", &Response::close);
}

}  // namespace humus_py
