// humus_http._native, cancelling: a caller's cancel token (Cancel) and the handle of an asynchronous call
// (Call). Registered on the module by register_cancel (cancel.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <new>
#include <utility>

#include "handles.h"
#include "humus_http.h"
#include "native.h"

namespace humus_py {

// A caller's cancel token: set on the request of every call made with it (humus_request_set_cancel), which
// the core honours for blocking and submitted calls alike. Triggered once, it cancels every call made with
// it, now and later. Thread-safe; needs no GIL.
class Cancel {
 public:
  Cancel() {
    humus_cancel* raw = nullptr;
    if (humus_cancel_new(&raw) != HUMUS_OK) throw std::bad_alloc();
    token_.reset(raw);
  }
  humus_cancel* token() const { return token_.get(); }

  void trigger() {
    // Release pairs with triggered()'s acquire: whoever sees the flag sees the token triggered first.
    humus_cancel_trigger(token_.get());
    triggered_.store(true, std::memory_order_release);
  }
  bool triggered() const { return triggered_.load(std::memory_order_acquire); }

 private:
  CancelPtr token_;  // the request and every call made with it hold the core's token too
  std::atomic<bool> triggered_{false};
};

// A call's `cancel` argument: a Cancel, or None for none. Taken as a handle rather than as a typed argument
// because pybind11 tries a None against the types of other modules first, through a failing getattr whose
// AttributeError it formats and drops (callgrind: 5.6k of a sync call's 126k instructions).
std::shared_ptr<Cancel> cancel_of(py::handle cancel);

// The handle of an asynchronous call: cancel() ends it early (the future still receives its outcome).
class Call {
 public:
  explicit Call(CallPtr c) : c_(std::move(c)) {}
  void cancel() { humus_call_cancel(c_.get()); }

 private:
  CallPtr c_;
};

}  // namespace humus_py
