// What the translation units of humus_http._native share: holding the GIL from any thread, handing a
// callback's Python exception back to the call it ended, raising a C ABI failure, and the registration of
// each concern on the module by module.cpp's init. What a few files share besides lives in the header of its
// concern (errors.h, runtime.h, response.h, bridge.h, ...); everything else stays private to its .cpp file.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <mutex>

#include "humus_http.h"

namespace humus_py {

namespace py = pybind11;

// Runs `work` without the GIL when the calling thread holds it: freeing a runtime, client or registry waits
// for the event loop, whose callbacks may be waiting for the GIL.
template <typename Work>
void without_gil(Work work) {
  if (PyGILState_Check() != 0) {
    py::gil_scoped_release nogil;
    work();
  } else {
    work();
  }
}

// Empties `slot` under `mu` (a close() other threads may race) and drops what it held without the GIL.
template <typename T>
void release_shared(std::mutex& mu, std::shared_ptr<T>& slot) {
  std::shared_ptr<T> held;
  {
    std::lock_guard<std::mutex> lock(mu);
    held.swap(slot);
  }
  if (held) without_gil([&] { held.reset(); });
}

inline bool interpreter_finalizing();

// user_data of a C callback table (classifier, breaker policy, mock transport): a Python callable, released
// with the GIL by the table's destroy (destroy_callable).
struct PyCallable {
  py::object fn;
};

// A table's destroy: drops the callable with the GIL held — or, once the interpreter is finalizing and no GIL
// is to be had, leaks the reference rather than crash.
inline void destroy_callable(void* user_data);

inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// Holds the GIL on any thread, the runtime's event-loop thread included. The first acquisition on a thread
// Python does not know keeps that thread's state for the thread's life (one extra PyGILState_Ensure), so the
// loop thread does not create and destroy a thread state for every callback.
class Gil {
 public:
  Gil() : state_(ensure()) {}
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  static PyGILState_STATE ensure() {
    thread_local bool seen = false;
    if (seen) return PyGILState_Ensure();
    seen = true;
    const bool foreign = PyGILState_GetThisThreadState() == nullptr;
    const PyGILState_STATE state = PyGILState_Ensure();
    if (foreign) (void)PyGILState_Ensure();  // never released: the thread state lives as long as the thread
    return state;
  }

  PyGILState_STATE state_;
};

// GIL held, a Python error set: keeps it for the call that the failing callback ends (errors.cpp), which
// re-raises it. Clears the error indicator.
void keep_callback_exception();

// GIL held: raises humus_http._native.Failure for a failed C call (takes `err`, which may be null).
[[noreturn]] void raise_failure(humus_status status, humus_error* err);

// GIL held: the C runtime of a humus_http._native.Runtime (pybind11's cast error for another object).
humus_runtime* runtime_of(py::handle runtime);

// What each file adds to the module, in the order module.cpp's init calls them.
// errors.cpp: humus_http._native.Failure (and its translation from Failure) and ErrorInfo.
void register_errors(py::module_& m);
// runtime.cpp: Runtime.
void register_runtime(py::module_& m);
// callbacks.cpp: Attempt, classify_default and classify_preset.
void register_callbacks(py::module_& m);
// settings.cpp: settings_schema_json.
void register_settings(py::module_& m);
// response.cpp: Response.
void register_response(py::module_& m);
// bridge.cpp: Bridge.
void register_bridge(py::module_& m);
// cancel.cpp: Call and Cancel.
void register_cancel(py::module_& m);
// client.cpp: Client.
void register_client(py::module_& m);
// upstreams.cpp: Upstreams (docs/upstreams.md §15.1).
void register_upstreams(py::module_& m);

// testing.cpp: the mock transport (docs/testing-kit.md §16.2) and status names, added to the module.
void register_testing(py::module_& m);

// telemetry.cpp: the span and log sinks (docs/telemetry.md §13.1, §13.3), the metrics (docs/telemetry.md §13.2) and readiness
// (docs/upstreams.md §15.2) reports, added to the module.
void register_telemetry(py::module_& m);

inline void destroy_callable(void* user_data) {
  auto* callable = static_cast<PyCallable*>(user_data);
  if (interpreter_finalizing()) {
    (void)callable->fn.release();
    delete callable;
    return;
  }
  Gil gil;
  delete callable;
}

}  // namespace humus_py
