// humus_http._native, asynchronous completions (bridge.h): a submitted call's on_done (which starts a
// streamed body's read-ahead), and the Bridge's Python class.
#include "bridge.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <utility>

#include "errors.h"
#include "humus_http.h"
#include "response.h"

namespace humus_py {

void async_done(void* user_data, humus_status status, humus_response* resp, humus_error* err) {
  std::unique_ptr<AsyncPending> pending(static_cast<AsyncPending*>(user_data));
  const int64_t elapsed = pending->clock->now_us() - pending->start_us;
  uint64_t ahead = 0;
  if (pending->client && status == HUMUS_OK) {
    // Read ahead from the headers on, so that a read finding bytes in takes them without a loop round trip.
    ahead = read_ahead(resp, &status, &err);
    if (ahead == 0) {
      humus_response_free(resp);
      resp = nullptr;
    }
  }
  pending->bridge->push(pending->future, status, resp, err, take_callback_exception(), elapsed,
                        std::move(pending->client), ahead);
}

void register_bridge(py::module_& m) {
  py::class_<Bridge, std::shared_ptr<Bridge>>(m, "Bridge",
                                             "Delivers completions to the asyncio loop that watches fileno().")
      .def(py::init<>())
      .def("fileno", &Bridge::fileno)
      .def("drain", &Bridge::drain);
}

}  // namespace humus_py
