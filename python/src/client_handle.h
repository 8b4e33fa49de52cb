// humus_http._native, the shared owners of a C client and of an upstreams registry: held by the Python
// objects and by the calls in flight, so that the C object is freed by the last of them, without the GIL.
#pragma once

#include <memory>
#include <utility>

#include "humus_http.h"
#include "native.h"
#include "runtime.h"

namespace humus_py {

// An upstreams registry (docs/upstreams.md §15.1) and the runtime it was built on. Shared by the Upstreams object and by
// every client handle over one of its clients (the registry owns those clients): freed with the last of them.
class UpstreamsHandle {
 public:
  UpstreamsHandle(std::shared_ptr<Runtime> runtime, humus_upstreams* u)
      : runtime_(std::move(runtime)), u_(u) {}
  ~UpstreamsHandle() {
    // Frees the registry's clients, waiting for their asynchronous calls, whose completions may need the GIL.
    without_gil([this] { humus_upstreams_free(u_); });
  }
  UpstreamsHandle(const UpstreamsHandle&) = delete;
  UpstreamsHandle& operator=(const UpstreamsHandle&) = delete;
  humus_upstreams* get() const { return u_; }
  const std::shared_ptr<Runtime>& runtime() const { return runtime_; }

 private:
  std::shared_ptr<Runtime> runtime_;  // outlives the registry
  humus_upstreams* u_;
};

// The C client and the runtime it was built from. Shared by the calls in flight, so that close() while a
// blocking call runs frees the client only when that call is done (humus_client_free must not overlap one).
// A client of an upstreams registry is the registry's to free: its handle holds the registry instead.
class ClientHandle {
 public:
  ClientHandle(std::shared_ptr<Runtime> runtime, humus_client* c) : runtime_(std::move(runtime)), c_(c) {}
  ClientHandle(std::shared_ptr<UpstreamsHandle> registry, humus_client* c)
      : runtime_(registry->runtime()), registry_(std::move(registry)), c_(c) {}
  ~ClientHandle() {
    // Waits for the asynchronous calls in flight, whose completions may need the GIL.
    without_gil([this] { release(); });
  }
  ClientHandle(const ClientHandle&) = delete;
  ClientHandle& operator=(const ClientHandle&) = delete;
  humus_client* get() const { return c_; }
  humus_runtime* runtime() const { return runtime_->get(); }
  const Runtime& clock() const { return *runtime_; }

 private:
  void release() {
    if (registry_) {
      registry_.reset();  // the last holder of the registry frees it, and this client with it
    } else {
      humus_client_free(c_);
    }
  }

  std::shared_ptr<Runtime> runtime_;           // outlives the client
  std::shared_ptr<UpstreamsHandle> registry_;  // the owner of c_, or empty when c_ is this handle's own
  humus_client* c_;
};

}  // namespace humus_py
