// humus_http._native, the runtime's Python class (runtime.h), and its C runtime for the other translation
// units (runtime_of, native.h).
#include "runtime.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "humus_http.h"
#include "native.h"

namespace humus_py {

humus_runtime* runtime_of(py::handle runtime) { return runtime.cast<Runtime&>().get(); }

void register_runtime(py::module_& m) {
  py::class_<Runtime, std::shared_ptr<Runtime>>(m, "Runtime",
                                                "A humus_runtime: event loop, clock, name overrides.")
      .def(py::init<const std::string&>(), py::arg("options_json"))
      .def("advance_ms", &Runtime::advance_ms, py::arg("ms"),
           "Moves a virtual clock forward (humus_runtime_advance_ms).")
      .def("elapsed_ms", &Runtime::elapsed_ms, py::call_guard<py::gil_scoped_release>(),
           "Milliseconds the runtime's clock has advanced since it was made.");
}

}  // namespace humus_py
