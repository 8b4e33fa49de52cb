// humus_http._native, the client: a Client over a humus_client (its own, or an upstreams registry's), and its
// calls, blocking, streamed and asynchronous. Registered on the module by register_client (client.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "bridge.h"
#include "cancel.h"
#include "client_handle.h"
#include "request.h"
#include "runtime.h"

namespace humus_py {

// One owner's share of a C client (ClientHandle): close() releases it, and the calls in flight keep theirs.
class Client {
 public:
  Client(std::shared_ptr<Runtime> runtime, const std::string& settings_json, py::object classifier,
         py::object trip, py::object probe);

  // An owner of the C client of `handle` (its own, or a registry's).
  explicit Client(std::shared_ptr<ClientHandle> handle) : handle_(std::move(handle)) {}

  // Another owner of this client's C client (its connections, breaker, budget, bulkhead): each owner closes
  // its own share; the C client is freed with the last one.
  static std::unique_ptr<Client> share(Client& of);

  ~Client() { close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Releases this owner's share: the C client is freed now, or by the last call still using it.
  void close();
  bool closed();

  std::string breaker_state();

  // The breaker's counts (docs/breaker.md §9.3) as the eight integers of the policy adapters.
  py::tuple breaker_counts();

  // The retry budget's balance (docs/retries.md §6.4).
  double budget_tokens();
  // The bulkhead's limit now (docs/bulkhead.md §11.1).
  uint32_t bulkhead_limit();

  // A blocking call: a Response, or an ErrorInfo when no response came. Argument errors raise Failure.
  // `cancel` (may be null) ends it early.
  py::object request(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
                     int32_t retry, int32_t follow, int64_t timeout_ms, py::handle context,
                     py::handle cancel_arg, py::handle hooks);

  // A streamed call (humus_client_open): a Response whose body is read with read(), or an ErrorInfo. Runs
  // without the GIL on any thread; `cancel` (may be null) ends it, its body reads included.
  py::object open(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
                  int32_t retry, int32_t follow, int64_t timeout_ms, py::handle context,
                  py::handle cancel_arg, py::handle hooks);

  // An asynchronous call: `future` (an asyncio.Future of `bridge`'s loop) receives a Response or an
  // ErrorInfo.
  Call submit(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
              int32_t retry, int32_t follow, int64_t timeout_ms, const std::shared_ptr<Bridge>& bridge,
              py::object future, py::handle context, py::handle cancel, py::handle hooks);

  // An asynchronous streamed call (humus_client_submit_open): `future` receives a Response once the
  // headers are in, its body read ahead from then on and copied out with Response.take(), or an ErrorInfo.
  // `cancel` (may be null) ends the call and its body reads; Call.cancel() ends only the call before its
  // headers.
  Call submit_open(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
                   int32_t retry, int32_t follow, int64_t timeout_ms, const std::shared_ptr<Bridge>& bridge,
                   py::object future, py::handle context, py::handle cancel, py::handle hooks);

 private:
  std::shared_ptr<ClientHandle> acquire();

  // humus_client_submit, or with `open` humus_client_submit_open (whose Response keeps the client alive).
  Call start_async(bool open, const Prepared& p, const std::shared_ptr<Bridge>& bridge, py::object future,
                   const std::shared_ptr<Cancel>& cancel);

  std::mutex mu_;
  std::shared_ptr<ClientHandle> handle_;  // guarded by mu_; empty once closed
};

}  // namespace humus_py
