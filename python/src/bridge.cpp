// humus_http._native, asynchronous completions (bridge.h): a submitted call's on_done, and the Bridge's
// Python class.
#include "bridge.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <utility>

#include "errors.h"
#include "humus_http.h"

namespace humus_py {

void async_done(void* user_data, humus_status status, humus_response* resp, humus_error* err) {
  std::unique_ptr<AsyncPending> pending(static_cast<AsyncPending*>(user_data));
  const int64_t elapsed = pending->clock->now_us() - pending->start_us;
  pending->bridge->push(pending->future, status, resp, err, take_callback_exception(), elapsed,
                        std::move(pending->client));
}

void register_bridge(py::module_& m) {
  py::class_<Bridge, std::shared_ptr<Bridge>>(m, "Bridge",
                                             "Delivers completions to the asyncio loop that watches fileno().")
      .def(py::init<>())
      .def("fileno", &Bridge::fileno)
      .def("drain", &Bridge::drain);
}

}  // namespace humus_py
