// humus_http._native, errors: a callback's exception kept for its call, ErrorInfo, Failure and its
// translation into humus_http._native.Failure (errors.h).
#include "errors.h"

#include <pybind11/pybind11.h>

#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "humus_http.h"
#include "native.h"

namespace humus_py {

namespace {

// A callback that raises stores its exception here, on the thread that ran it, and returns a non-OK status;
// the call then ends with HUMUS_E_CALLBACK on that same thread (the caller's for a blocking call, the loop
// thread for an asynchronous one), which takes the exception back. An owned reference (or null): moving the
// pointer needs no GIL, dropping it does.
thread_local PyObject* t_callback_exception = nullptr;

// humus_http._native.Failure, made by register_errors.
PyObject* g_failure_type = nullptr;

}  // namespace

void store_callback_exception() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (value != nullptr && traceback != nullptr) PyException_SetTraceback(value, traceback);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  if (t_callback_exception == nullptr) {
    t_callback_exception = value;
  } else {
    Py_XDECREF(value);
  }
}

PyObject* take_callback_exception() {
  PyObject* e = t_callback_exception;
  t_callback_exception = nullptr;
  return e;
}

std::string ErrorInfo::trace_json() const {
  if (!error) return "[]";
  char* text = nullptr;
  size_t len = 0;
  const humus_status st = humus_error_trace(error.get(), &text, &len);
  if (st != HUMUS_OK) throw std::runtime_error(std::string("humus_error_trace: ") + humus_status_name(st));
  std::string out(text, len);
  humus_string_free(text);
  return out;
}

ErrorInfo make_error(humus_status status, ErrorPtr err, PyObject* callback_exception) {
  ErrorInfo info;
  info.status = status;
  info.status_name = humus_status_name(status);
  if (const humus_error* e = err.get(); e != nullptr) {
    info.message = humus_error_message(e);
    info.attempts = humus_error_attempts(e);
    info.retry_after_ms = humus_error_retry_after_ms(e);
    const size_t n = humus_error_field_count(e);
    for (size_t i = 0; i < n; ++i) {
      const char* f = humus_error_field(e, i);
      if (f != nullptr) info.fields.emplace_back(f);
    }
    info.error = std::shared_ptr<const humus_error>(err.release(), [](const humus_error* owned) {
      humus_error_free(const_cast<humus_error*>(owned));
    });
  } else {
    info.message = info.status_name;
  }
  if (callback_exception != nullptr) info.exception = py::reinterpret_steal<py::object>(callback_exception);
  return info;
}

[[noreturn]] void fail(humus_status status, ErrorPtr err) {
  throw Failure{make_error(status, std::move(err), nullptr)};
}

void keep_callback_exception() { store_callback_exception(); }

void raise_failure(humus_status status, humus_error* err) { fail(status, ErrorPtr(err)); }

void register_errors(py::module_& m) {
  g_failure_type = PyErr_NewExceptionWithDoc(
      "humus_http._native.Failure",
      "A C ABI call failed before any request was made; args[0] is the ErrorInfo.", nullptr, nullptr);
  if (g_failure_type == nullptr) throw py::error_already_set();
  m.add_object("Failure", py::handle(g_failure_type));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (Failure& f) {
      py::object info = py::cast(std::move(f.info));
      PyErr_SetObject(g_failure_type, py::make_tuple(info).ptr());
    }
  });

  py::class_<ErrorInfo>(m, "ErrorInfo", "What a failed C call reported (copied out of its humus_error).")
      .def_readonly("status", &ErrorInfo::status)
      .def_readonly("status_name", &ErrorInfo::status_name)
      .def_readonly("message", &ErrorInfo::message)
      .def_readonly("attempts", &ErrorInfo::attempts)
      .def("trace_json", &ErrorInfo::trace_json)
      .def_property_readonly("fields",
                             [](const ErrorInfo& e) {
                               py::tuple t(e.fields.size());
                               for (size_t i = 0; i < e.fields.size(); ++i) t[i] = py::str(e.fields[i]);
                               return t;
                             })
      .def_readonly("retry_after_ms", &ErrorInfo::retry_after_ms)
      .def_readonly("elapsed_us", &ErrorInfo::elapsed_us)
      .def_readonly("exception", &ErrorInfo::exception);
}

}  // namespace humus_py
