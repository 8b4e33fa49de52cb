// humus_http._native, the runtime: the owner of a humus_runtime (event loop, clock, name overrides) and the
// clock a call's elapsed time is measured on. Registered on the module by register_runtime (runtime.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "errors.h"
#include "handles.h"
#include "humus_http.h"
#include "native.h"

namespace humus_py {

class Runtime {
 public:
  explicit Runtime(const std::string& options_json) {
    humus_error* err = nullptr;
    const humus_status st = humus_runtime_new(options_json.data(), options_json.size(), &rt_, &err);
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
    // Advancing by 0 changes nothing on a virtual clock; a real clock refuses it with HUMUS_E_MISUSE.
    virtual_clock_ = humus_runtime_advance_ms(rt_, 0, nullptr) == HUMUS_OK;
  }
  ~Runtime() {
    // Joins the event-loop thread, which may be waiting for the GIL in a callback.
    if (rt_ == nullptr) return;
    without_gil([this] { humus_runtime_free(rt_); });
  }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  humus_runtime* get() const { return rt_; }

  // The virtual clock (docs/testing-kit.md §16.1). Advancing wakes the waits that come due, whose callbacks need the GIL.
  void advance_ms(int64_t ms) {
    humus_error* err = nullptr;
    humus_status st;
    {
      py::gil_scoped_release nogil;
      st = humus_runtime_advance_ms(rt_, ms, &err);
    }
    if (st != HUMUS_OK) fail(st, ErrorPtr(err));
  }
  int64_t elapsed_ms() const { return humus_runtime_elapsed_ms(rt_); }
  // What a call's elapsed time is measured on, in microseconds: a virtual clock's own time, or on a real
  // clock the steady clock (the C ABI reads the runtime's clock in whole milliseconds; Response.elapsed is
  // finer). Any thread, no GIL needed.
  int64_t now_us() const {
    if (virtual_clock_) return humus_runtime_elapsed_ms(rt_) * 1000;
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  humus_runtime* rt_ = nullptr;
  bool virtual_clock_ = false;  // set once at construction
};

}  // namespace humus_py
