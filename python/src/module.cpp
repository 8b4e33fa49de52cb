// humus_http._native: thin wrappers over the C ABI (include/humus_http.h) for the plain-Python API in
// python/humus_http. Every handle lives in an RAII owner; the GIL is released around every call that may wait
// (the network, the bulkhead, a breaker lock a callback may hold, the event loop); callbacks into Python take
// it. Nothing here knows the C++ core: the C header is the whole contract.
//
// This file is the module's init: it checks the core's ABI, notes what the main-thread calls need, and
// registers each concern's classes and functions (native.h lists the register_* functions and their files).
#include <pybind11/pybind11.h>

#include <stdexcept>

#include "humus_http.h"
#include "main_thread.h"
#include "native.h"

namespace py = pybind11;

PYBIND11_MODULE(_native, m) {
  m.doc() = "humus_http's extension: thin wrappers over the C ABI of libhumus_http (include/humus_http.h).";

  if (humus_abi_version() != HUMUS_ABI_VERSION) {
    throw std::runtime_error("humus_http: the linked core's ABI major differs from the header's");
  }
  humus_py::g_main_thread =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  humus_py::g_set_wakeup_fd = py::object(py::module_::import("signal").attr("set_wakeup_fd")).release().ptr();

  humus_py::register_errors(m);
  m.attr("VERSION") = humus_version();
  humus_py::register_runtime(m);
  humus_py::register_callbacks(m);
  humus_py::register_settings(m);
  humus_py::register_response(m);
  humus_py::register_bridge(m);
  humus_py::register_cancel(m);
  humus_py::register_client(m);
  humus_py::register_upstreams(m);
  humus_py::register_testing(m);
  humus_py::register_telemetry(m);
}
