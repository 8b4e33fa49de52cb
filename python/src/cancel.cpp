// humus_http._native, cancelling (cancel.h): a call's `cancel` argument, and the Call and Cancel Python
// classes.
#include "cancel.h"

#include <pybind11/pybind11.h>

#include <memory>

namespace humus_py {

std::shared_ptr<Cancel> cancel_of(py::handle cancel) {
  if (cancel.is_none()) return nullptr;
  if (!py::isinstance<Cancel>(cancel)) throw py::type_error("cancel must be a Cancel or None");
  return cancel.cast<std::shared_ptr<Cancel>>();
}

void register_cancel(py::module_& m) {
  py::class_<Call>(m, "Call", "An asynchronous call in flight; cancel() ends it early.")
      .def("cancel", &Call::cancel, py::call_guard<py::gil_scoped_release>());

  py::class_<Cancel, std::shared_ptr<Cancel>>(
      m, "Cancel", "A cancel token (humus_cancel): the core cancels blocking and submitted calls through it.")
      .def(py::init<>())
      .def("trigger", &Cancel::trigger, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("triggered", &Cancel::triggered);
}

}  // namespace humus_py
