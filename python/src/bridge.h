// humus_http._native, asynchronous completions: the Bridge that hands them from the runtime's event-loop
// thread to an asyncio loop, and what a submitted call carries to it. Registered on the module by
// register_bridge (bridge.cpp).
#pragma once

#include <pybind11/pybind11.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "handles.h"
#include "humus_http.h"
#include "native.h"
#include "response.h"
#include "runtime.h"

namespace humus_py {

// Delivers completions to one asyncio loop, which watches fileno() (loop.add_reader(fileno, drain), see
// _async.py). The runtime's event-loop thread queues them and, when the queue was empty, writes the eventfd;
// drain() then resolves every queued future on the asyncio loop's own thread. The event-loop thread never
// takes the GIL here: with loop.call_soon_threadsafe it had to, and while it waited for the asyncio thread
// to let go of the GIL every call of the runtime waited with it, so the two threads took turns instead of
// running at once (bench/README.md). Thread-safe.
class Bridge {
 public:
  Bridge() : wake_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (wake_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  ~Bridge() {
    // The last holder may be a completion on the loop thread: Python references need the GIL.
    std::vector<Item> left;
    left.swap(items_);
    close(wake_);
    if (interpreter_finalizing()) return;
    Gil gil;
    for (Item& item : left) {
      Py_XDECREF(item.future);
      Py_XDECREF(item.exception);
      if (item.ahead != 0) forget_ahead(item.ahead);
      humus_response_free(item.resp);
      humus_error_free(item.err);
    }
  }

  // The eventfd that turns readable when completions are queued.
  int fileno() const { return wake_; }
  Bridge(const Bridge&) = delete;
  Bridge& operator=(const Bridge&) = delete;

  // Loop thread, no GIL. Takes ownership of every pointer. `client` (may be null): a streamed response's
  // client, which the Response keeps (dropped on the asyncio thread, never on the loop thread); `ahead`: its
  // body's key (read_ahead).
  void push(PyObject* future, humus_status status, humus_response* resp, humus_error* err,
            PyObject* exception, int64_t elapsed_us, std::shared_ptr<ClientHandle> client = nullptr,
            uint64_t ahead = 0) {
    enqueue(Item{future, status, resp, err, exception, elapsed_us, std::move(client), ahead, false});
  }

  // A body read ahead may have bytes for the reader that awaits `future` (owned), resolved with None. No GIL:
  // the loop thread, or Response.hurry()'s.
  void push_ready(PyObject* future) {
    enqueue(Item{future, HUMUS_OK, nullptr, nullptr, nullptr, 0, nullptr, 0, true});
  }

  // The asyncio loop's thread, GIL held: resolves the queued futures with a Response, None or an ErrorInfo.
  void drain() {
    std::vector<Item> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      uint64_t wakes = 0;
      (void)!read(wake_, &wakes, sizeof wakes);  // nonblocking: nothing to read is EAGAIN, and fine
      batch.swap(items_);
      scheduled_ = false;
    }
    // Leaked on purpose: a static py::str would be released after the interpreter is gone.
    static PyObject* const done_name = PyUnicode_InternFromString("done");
    static PyObject* const set_result_name = PyUnicode_InternFromString("set_result");
    for (Item& item : batch) {
      py::object future = py::reinterpret_steal<py::object>(item.future);
      py::object result;
      if (item.ready) {
        result = py::none();
      } else if (item.client && item.status == HUMUS_OK) {
        Py_XDECREF(item.exception);
        result = py::cast(new Response(item.resp, item.elapsed_us, std::move(item.client), item.ahead),
                          py::return_value_policy::take_ownership);
      } else {
        result = outcome(item.status, item.resp, item.err, item.exception, item.elapsed_us);
      }
      // A Response nobody awaits any more (its task was cancelled) is freed with `result`: closed. Called
      // through the C API's method calls, which bind no method object and build no argument tuple, as
      // pybind11's attr()() did (callgrind: 8.0k -> 7.0k instructions a completion, most of the rest being
      // asyncio's own set_result).
      const py::object done =
          py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(future.ptr(), done_name));
      if (!done) throw py::error_already_set();
      const int is_done = PyObject_IsTrue(done.ptr());
      if (is_done < 0) throw py::error_already_set();
      if (is_done == 0) {
        const py::object set = py::reinterpret_steal<py::object>(
            PyObject_CallMethodOneArg(future.ptr(), set_result_name, result.ptr()));
        if (!set) throw py::error_already_set();
      }
      if (item.client) without_gil([&] { item.client.reset(); });
    }
  }

 private:
  struct Item {
    PyObject* future;
    humus_status status;
    humus_response* resp;
    humus_error* err;
    PyObject* exception;
    int64_t elapsed_us;
    std::shared_ptr<ClientHandle> client;  // a streamed response's (submit_open), else null
    uint64_t ahead;                        // a streamed response's body's key (read_ahead), else 0
    bool ready;                            // push_ready's: only `future` is set
  };

  void enqueue(Item item) {
    bool schedule = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(std::move(item));
      schedule = !scheduled_;
      scheduled_ = true;
    }
    if (!schedule) return;
    // Cannot fail but for a full counter (2^64 - 2 wakes). A closed loop reads it no more: its futures,
    // awaited by nobody, are released with the bridge.
    const uint64_t one = 1;
    (void)!write(wake_, &one, sizeof one);
  }

  const int wake_;  // the eventfd
  std::mutex mu_;
  std::vector<Item> items_;  // guarded by mu_
  bool scheduled_ = false;   // guarded by mu_: the eventfd was written since the last drain()
};

// One submitted call in flight (Client.submit, Client.submit_open): what its on_done, async_done, hands to
// the bridge.
struct AsyncPending {
  std::shared_ptr<Bridge> bridge;
  PyObject* future;   // owned
  const Runtime* clock;  // outlives the call (the client holds it)
  int64_t start_us;     // Runtime::now_us when the call was submitted
  std::shared_ptr<ClientHandle> client = nullptr;  // submit_open: the client its Response keeps
};

// A submitted call's on_done (loop thread, no GIL): takes its AsyncPending and queues the outcome; for
// submit_open, with its body being read ahead from here on.
void async_done(void* user_data, humus_status status, humus_response* resp, humus_error* err);

}  // namespace humus_py
