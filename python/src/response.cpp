// humus_http._native, responses (response.h): a call's outcome, a streamed body read ahead (its ready handed
// to the Bridge), and the Response's Python class.
#include "response.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>

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

// What a ready of a body read ahead wakes: its reader's future, or, when no reader waits (a ready that came
// before wait()), a note that the next wait() should take again instead.
struct Wake {
  std::shared_ptr<Bridge> bridge;  // the reader's, with `future`
  PyObject* future = nullptr;      // owned; null while no reader waits
  bool came = false;
};

// Every body read ahead, by key. `ready`'s user_data is its key, not a pointer: a Response freed on the
// event-loop thread (the garbage collector may run inside a callback there) has its body closed only later on
// that thread, so a ready may come after the Response is gone, and then finds no key. Leaked: a ready may run
// while the process exits.
struct Wakes {
  std::mutex mu;
  std::unordered_map<uint64_t, Wake> by_key;  // guarded by mu
  uint64_t next_key = 1;                      // guarded by mu
};
Wakes& wakes() {
  static Wakes* const table = new Wakes;
  return *table;
}

// humus_body_ready (loop thread, or hurry()'s caller; no GIL): hands the waiting future to its bridge.
void body_ready(void* user_data, humus_response* /*resp*/) {
  Wakes& t = wakes();
  Wake woken;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    const auto it = t.by_key.find(reinterpret_cast<uintptr_t>(user_data));
    if (it == t.by_key.end()) return;
    if (it->second.future == nullptr) {
      it->second.came = true;
      return;
    }
    std::swap(woken, it->second);
  }
  woken.bridge->push_ready(woken.future);
}

}  // namespace

uint64_t read_ahead(humus_response* resp, humus_status* status, humus_error** err) {
  Wakes& t = wakes();
  uint64_t key = 0;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    key = t.next_key++;
    t.by_key.emplace(key, Wake{});
  }
  // The default ring: 64 KiB, 256 KiB for a body of 1 MiB or more, never more than the body. No body is held
  // whole (`whole` NULL): a stream hands its bytes over as they come, a small body's too.
  *status = humus_response_read_ahead(resp, 0, body_ready, reinterpret_cast<void*>(static_cast<uintptr_t>(key)),
                                      nullptr, err);
  if (*status == HUMUS_OK) return key;
  std::lock_guard<std::mutex> lock(t.mu);
  t.by_key.erase(key);  // no future yet: nothing needs the GIL
  return 0;
}

void forget_ahead(uint64_t key) {
  Wakes& t = wakes();
  Wake gone;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    const auto it = t.by_key.find(key);
    if (it == t.by_key.end()) return;
    std::swap(gone, it->second);
    t.by_key.erase(it);
  }
  // A reader still waiting (its response closed by another task) is woken, to find it closed. Outside the
  // lock, where the bridge may also go: its free calls forget_ahead.
  if (gone.future != nullptr) gone.bridge->push_ready(gone.future);
}

py::object Response::take(size_t cap) {
  humus_response* r = const_cast<humus_response*>(get());
  if (cap == 0) cap = 64 * 1024;
  // Copied straight into the bytes object returned, with the GIL: a take never waits.
  PyObject* out = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(cap));
  if (out == nullptr) throw py::error_already_set();
  auto owned = py::reinterpret_steal<py::bytes>(out);
  size_t n = 0;
  int32_t took = 0;
  humus_error* err = nullptr;
  const humus_status st = humus_response_take(r, PyBytes_AS_STRING(out), cap, 0, &n, &took, &err);
  if (st != HUMUS_OK) fail(st, ErrorPtr(err));
  if (took == HUMUS_TOOK_WAIT) return py::none();
  if (n == cap) return owned;
  out = owned.release().ptr();
  if (_PyBytes_Resize(&out, static_cast<Py_ssize_t>(n)) != 0) throw py::error_already_set();  // out freed
  return py::reinterpret_steal<py::bytes>(out);
}

bool Response::wait(const std::shared_ptr<Bridge>& bridge, py::object future) {
  (void)get();
  Wakes& t = wakes();
  std::lock_guard<std::mutex> lock(t.mu);
  const auto it = t.by_key.find(ahead_);
  if (it == t.by_key.end()) throw std::runtime_error("the response's body is not read ahead");
  Wake& w = it->second;
  if (w.future != nullptr) throw std::runtime_error("a read of this response waits already (one at a time)");
  if (w.came) {
    w.came = false;
    return false;
  }
  w.bridge = bridge;
  w.future = future.release().ptr();
  return true;
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
      .def("take", &Response::take, py::arg("cap"))
      .def("wait", &Response::wait, py::arg("bridge"), py::arg("future"))
      .def("hurry", &Response::hurry)
      .def("headers", &Response::headers)
      .def("trace_json", &Response::trace_json)
      .def("close", &Response::close);
}

}  // namespace humus_py
