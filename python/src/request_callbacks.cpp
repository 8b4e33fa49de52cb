// humus_http._native, a request's callbacks into Python (request_callbacks.h): the body reader and the
// attempt hooks.
#include "request_callbacks.h"

#include <pybind11/pybind11.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "errors.h"
#include "handles.h"
#include "humus_http.h"
#include "native.h"

namespace humus_py {

namespace {

// Runs `work` (a Python call) holding the GIL: HUMUS_OK, or HUMUS_E_CALLBACK with the exception kept for
// the call it ends (`what` names the adapter when a C++ exception is the cause).
template <typename Work>
humus_status with_python(const char* what, Work work) {
  if (interpreter_finalizing()) return HUMUS_E_CALLBACK;
  Gil gil;
  try {
    work();
    return HUMUS_OK;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    py::set_error(PyExc_RuntimeError, (std::string(what) + ": " + e.what()).c_str());
  }
  store_callback_exception();
  return HUMUS_E_CALLBACK;
}

// GIL held: (name, value) pairs; values latin-1, as Response.headers() reads them.
template <typename Name, typename Value>
py::list header_list(size_t n, Name name, Value value) {
  py::list out(n);
  for (size_t i = 0; i < n; ++i) {
    const char* v = value(i);
    PyObject* decoded =
        PyUnicode_DecodeLatin1(v, static_cast<Py_ssize_t>(std::char_traits<char>::length(v)), "strict");
    if (decoded == nullptr) throw py::error_already_set();
    out[i] = py::make_tuple(py::str(name(i)), py::reinterpret_steal<py::object>(decoded));
  }
  return out;
}

}  // namespace

humus_status body_read_trampoline(void* user_data, void* buf, size_t cap, size_t* n) {
  return with_python("request body reader", [&] {
    const py::object chunk = static_cast<PyBodyReader*>(user_data)->read(cap);
    char* data = nullptr;
    Py_ssize_t len = 0;
    if (!PyBytes_Check(chunk.ptr())) throw py::type_error("a request body reader must return bytes");
    if (PyBytes_AsStringAndSize(chunk.ptr(), &data, &len) != 0) throw py::error_already_set();
    if (static_cast<size_t>(len) > cap) {
      throw py::value_error("a request body reader returned more than asked");
    }
    std::memcpy(buf, data, static_cast<size_t>(len));
    *n = static_cast<size_t>(len);
  });
}

humus_status body_rewind_trampoline(void* user_data) {
  return with_python("request body rewind", [&] { (void)static_cast<PyBodyReader*>(user_data)->rewind(); });
}

void destroy_body_reader(void* user_data) {
  auto* reader = static_cast<PyBodyReader*>(user_data);
  if (interpreter_finalizing()) {
    (void)reader->read.release();
    (void)reader->rewind.release();
    delete reader;
    return;
  }
  Gil gil;
  delete reader;
}

humus_status before_trampoline(void* user_data, humus_attempt_request* r) {
  return with_python("request hook adapter", [&] {
    const py::list headers = header_list(
        humus_attempt_request_header_count(r),
        [&](size_t i) { return humus_attempt_request_header_name(r, i); },
        [&](size_t i) { return humus_attempt_request_header_value(r, i); });
    const py::object changes = static_cast<PyAttemptHooks*>(user_data)->before(
        humus_attempt_request_method(r), humus_attempt_request_url(r), humus_attempt_request_number(r),
        headers);
    if (changes.is_none()) return;
    for (const py::handle pair : changes) {
      const py::tuple t = py::reinterpret_borrow<py::tuple>(pair);
      const std::string name = t[0].cast<std::string>();
      const std::string value = t[1].cast<std::string>();
      humus_error* err = nullptr;
      if (humus_attempt_request_set_header(r, name.c_str(), value.c_str(), &err) != HUMUS_OK) {
        const ErrorPtr e(err);
        py::set_error(PyExc_ValueError, (std::string("a request hook set a header the client refuses: ") +
                                         humus_error_message(e.get()))
                                            .c_str());
        throw py::error_already_set();
      }
    }
  });
}

void after_trampoline(void* user_data, const humus_attempt* a) {
  // The adapter only records, and never raises: what could fail here (memory) is reported as unraisable
  // rather than kept on this thread, where it might end another call of the event loop.
  if (interpreter_finalizing()) return;
  Gil gil;
  try {
    const py::list headers = header_list(
        humus_attempt_header_count(a), [&](size_t i) { return humus_attempt_header_name(a, i); },
        [&](size_t i) { return humus_attempt_header_value(a, i); });
    static_cast<PyAttemptHooks*>(user_data)->after(humus_attempt_number(a), humus_attempt_status(a), headers);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("humus_http response hook adapter");
  } catch (const std::exception& e) {
    py::set_error(PyExc_RuntimeError, (std::string("response hook adapter: ") + e.what()).c_str());
    PyErr_WriteUnraisable(nullptr);
  }
}

void destroy_attempt_hooks(void* user_data) {
  auto* hooks = static_cast<PyAttemptHooks*>(user_data);
  if (interpreter_finalizing()) {
    (void)hooks->before.release();
    (void)hooks->after.release();
    delete hooks;
    return;
  }
  Gil gil;
  delete hooks;
}

}  // namespace humus_py
