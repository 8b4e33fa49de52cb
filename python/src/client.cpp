// humus_http._native, the client (client.h): its calls over the C ABI, and the Client's Python class.
#include "client.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "bridge.h"
#include "callbacks.h"
#include "cancel.h"
#include "client_handle.h"
#include "errors.h"
#include "handles.h"
#include "humus_http.h"
#include "main_thread.h"
#include "native.h"
#include "request.h"
#include "response.h"
#include "runtime.h"

namespace humus_py {

Client::Client(std::shared_ptr<Runtime> runtime, const std::string& settings_json, py::object classifier,
               py::object trip, py::object probe) {
  humus_error* err = nullptr;
  humus_settings* raw = nullptr;
  humus_status st = humus_settings_from_json(settings_json.data(), settings_json.size(), &raw, &err);
  if (st != HUMUS_OK) fail(st, ErrorPtr(err));
  SettingsPtr settings(raw);
  if (!classifier.is_none()) {
    humus_classifier table = HUMUS_CLASSIFIER_INIT;
    table.classify = classify_trampoline;
    table.user_data = new PyCallable{classifier};
    table.destroy = destroy_callable;
    st = humus_settings_set_classifier(settings.get(), &table, &err);
    if (st != HUMUS_OK) {
      delete static_cast<PyCallable*>(table.user_data);  // not taken on failure
      fail(st, ErrorPtr(err));
    }
  }
  if (!trip.is_none() || !probe.is_none()) {
    humus_breaker_policy table = HUMUS_BREAKER_POLICY_INIT;
    table.trip = trip.is_none() ? nullptr : trip_trampoline;
    table.probe = probe.is_none() ? nullptr : probe_trampoline;
    table.user_data = new PolicyCallables{trip, probe};
    table.destroy = destroy_policy;
    st = humus_settings_set_breaker_policy(settings.get(), &table, &err);
    if (st != HUMUS_OK) {
      delete static_cast<PolicyCallables*>(table.user_data);
      fail(st, ErrorPtr(err));
    }
  }
  humus_client* c = nullptr;
  {
    py::gil_scoped_release nogil;
    st = humus_client_new(runtime->get(), settings.get(), &c, &err);
    // The client holds its own copy and shares the callbacks; on failure this runs their destroy, which
    // takes the GIL itself.
    settings.reset();
  }
  if (st != HUMUS_OK) fail(st, ErrorPtr(err));
  handle_ = std::make_shared<ClientHandle>(std::move(runtime), c);
}

std::unique_ptr<Client> Client::share(Client& of) {
  return std::unique_ptr<Client>(new Client(of.acquire()));
}

void Client::close() {
  release_shared(mu_, handle_);
}

bool Client::closed() {
  std::lock_guard<std::mutex> lock(mu_);
  return !handle_;
}

std::string Client::breaker_state() {
  std::shared_ptr<ClientHandle> h = acquire();
  int32_t state = -1;
  humus_status st;
  {
    // The breaker's lock may be held by a policy callback waiting for the GIL.
    py::gil_scoped_release nogil;
    st = humus_client_breaker_state(h->get(), &state);
    h.reset();
  }
  if (st != HUMUS_OK) fail(st, nullptr);
  switch (state) {
    case HUMUS_CIRCUIT_CLOSED:
      return "closed";
    case HUMUS_CIRCUIT_OPEN:
      return "open";
    case HUMUS_CIRCUIT_HALF_OPEN:
      return "half_open";
    default:
      return "unknown";
  }
}

py::tuple Client::breaker_counts() {
  std::shared_ptr<ClientHandle> h = acquire();
  humus_breaker_counts counts = HUMUS_BREAKER_COUNTS_INIT;
  humus_status st;
  {
    py::gil_scoped_release nogil;  // as breaker_state: a policy callback may hold the breaker's lock
    st = humus_client_breaker_counts(h->get(), &counts);
    h.reset();
  }
  if (st != HUMUS_OK) fail(st, nullptr);
  return counts_tuple(&counts);
}

double Client::budget_tokens() {
  std::shared_ptr<ClientHandle> h = acquire();
  double tokens = 0;
  humus_status st;
  {
    py::gil_scoped_release nogil;
    st = humus_client_budget_tokens(h->get(), &tokens);
    h.reset();
  }
  if (st != HUMUS_OK) fail(st, nullptr);
  return tokens;
}

uint32_t Client::bulkhead_limit() {
  std::shared_ptr<ClientHandle> h = acquire();
  uint32_t limit = 0;
  humus_status st;
  {
    py::gil_scoped_release nogil;
    st = humus_client_bulkhead_limit(h->get(), &limit);
    h.reset();
  }
  if (st != HUMUS_OK) fail(st, nullptr);
  return limit;
}

py::object Client::request(py::handle method, py::handle url, py::handle headers, py::handle body,
                           py::handle key, int32_t retry, int32_t follow, int64_t timeout_ms,
                           py::handle context, py::handle cancel_arg, py::handle hooks) {
  const std::shared_ptr<Cancel> cancel = cancel_of(cancel_arg);
  std::shared_ptr<ClientHandle> h = acquire();
  const Prepared p = prepare(method, url, headers, body, key, retry, follow, timeout_ms, context, hooks);
  Py_XDECREF(take_callback_exception());  // nothing stale from a call that ended otherwise
  if (PyThread_get_thread_ident() == g_main_thread) {
    // The main thread's own token is Ctrl-C's (SignalWatch); a caller's token goes on the request of a
    // submitted call instead, while this thread polls for signals.
    if (cancel) {
      RequestPtr req = build_or_fail(p);
      humus_request_set_cancel(req.get(), cancel->token());
      return request_polling(std::move(h), std::move(req));
    }
    return request_on_main(std::move(h), build_or_fail(p));
  }
  // Built and sent without the GIL: other threads run while this one parses, allocates and waits.
  Built b;
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  humus_status st = HUMUS_OK;
  int64_t elapsed = 0;
  {
    py::gil_scoped_release nogil;
    b = build(p);
    if (b.status == HUMUS_OK) {
      if (cancel) humus_request_set_cancel(b.req.get(), cancel->token());
      const int64_t start = h->clock().now_us();
      st = humus_client_do(h->get(), b.req.get(), &resp, &err);
      elapsed = h->clock().now_us() - start;
      b.req.reset();
    }
    h.reset();  // may be the last share after a close(): frees the client without the GIL
  }
  if (b.status != HUMUS_OK) fail(b.status, std::move(b.err));
  return outcome(st, resp, err, st == HUMUS_E_CALLBACK ? take_callback_exception() : nullptr, elapsed);
}

py::object Client::open(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
                        int32_t retry, int32_t follow, int64_t timeout_ms, py::handle context,
                        py::handle cancel_arg, py::handle hooks) {
  const std::shared_ptr<Cancel> cancel = cancel_of(cancel_arg);
  std::shared_ptr<ClientHandle> h = acquire();
  const Prepared p = prepare(method, url, headers, body, key, retry, follow, timeout_ms, context, hooks);
  Py_XDECREF(take_callback_exception());
  Built b;
  humus_response* resp = nullptr;
  humus_error* err = nullptr;
  humus_status st = HUMUS_OK;
  int64_t elapsed = 0;
  {
    py::gil_scoped_release nogil;
    b = build(p);
    if (b.status == HUMUS_OK) {
      if (cancel) humus_request_set_cancel(b.req.get(), cancel->token());
      const int64_t start = h->clock().now_us();
      st = humus_client_open(h->get(), b.req.get(), &resp, &err);
      elapsed = h->clock().now_us() - start;
      b.req.reset();
    }
  }
  if (b.status != HUMUS_OK) fail(b.status, std::move(b.err));
  if (st == HUMUS_OK) {
    Py_XDECREF(take_callback_exception());
    return py::cast(new Response(resp, elapsed, std::move(h)), py::return_value_policy::take_ownership);
  }
  py::object out = outcome(st, resp, err, st == HUMUS_E_CALLBACK ? take_callback_exception() : nullptr, elapsed);
  {
    py::gil_scoped_release nogil;
    h.reset();
  }
  return out;
}

Call Client::submit(py::handle method, py::handle url, py::handle headers, py::handle body, py::handle key,
                    int32_t retry, int32_t follow, int64_t timeout_ms, const std::shared_ptr<Bridge>& bridge,
                    py::object future, py::handle context, py::handle cancel, py::handle hooks) {
  return start_async(false,
                     prepare(method, url, headers, body, key, retry, follow, timeout_ms, context, hooks),
                     bridge, std::move(future), cancel_of(cancel));
}

Call Client::submit_open(py::handle method, py::handle url, py::handle headers, py::handle body,
                         py::handle key, int32_t retry, int32_t follow, int64_t timeout_ms,
                         const std::shared_ptr<Bridge>& bridge, py::object future, py::handle context,
                         py::handle cancel, py::handle hooks) {
  return start_async(true,
                     prepare(method, url, headers, body, key, retry, follow, timeout_ms, context, hooks),
                     bridge, std::move(future), cancel_of(cancel));
}

std::shared_ptr<ClientHandle> Client::acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!handle_) throw std::runtime_error("the client is closed");
  return handle_;
}

Call Client::start_async(bool open, const Prepared& p, const std::shared_ptr<Bridge>& bridge,
                         py::object future, const std::shared_ptr<Cancel>& cancel) {
  std::shared_ptr<ClientHandle> h = acquire();
  RequestPtr req = build_or_fail(p);
  // The core cancels the submitted call through the token (one already triggered: before anything is sent).
  if (cancel) humus_request_set_cancel(req.get(), cancel->token());
  auto pending = std::make_unique<AsyncPending>(AsyncPending{
      bridge, future.release().ptr(), &h->clock(), h->clock().now_us(), open ? h : nullptr});
  humus_call* call = nullptr;
  humus_error* err = nullptr;
  const humus_status st =
      open ? humus_client_submit_open(h->get(), req.get(), async_done, pending.get(), &call, &err)
           : humus_client_submit(h->get(), req.get(), async_done, pending.get(), &call, &err);
  if (st != HUMUS_OK) {
    Py_DECREF(pending->future);
    fail(st, ErrorPtr(err));
  }
  (void)pending.release();  // async_done owns it now
  return Call(CallPtr(call));
}

void register_client(py::module_& m) {
  py::class_<Client>(m, "Client", "A humus_client and its runtime.")
      .def(py::init<std::shared_ptr<Runtime>, const std::string&, py::object, py::object, py::object>(),
           py::arg("runtime"), py::arg("settings_json"), py::arg("classifier"), py::arg("trip"),
           py::arg("probe"))
      .def("close", &Client::close)
      .def_property_readonly("closed", &Client::closed)
      .def_property_readonly("breaker_state", &Client::breaker_state)
      .def("breaker_counts", &Client::breaker_counts)
      .def("budget_tokens", &Client::budget_tokens)
      .def("bulkhead_limit", &Client::bulkhead_limit)
      .def("share", &Client::share, "Another owner of the same C client.")
      .def("request", &Client::request, py::arg("method"), py::arg("url"), py::arg("headers"),
           py::arg("body"), py::arg("idempotency_key"), py::arg("retry"), py::arg("follow"),
           py::arg("timeout_ms"), py::arg("context") = py::none(), py::arg("cancel") = py::none(),
           py::arg("hooks") = py::none())
      .def("open", &Client::open, py::arg("method"), py::arg("url"), py::arg("headers"), py::arg("body"),
           py::arg("idempotency_key"), py::arg("retry"), py::arg("follow"), py::arg("timeout_ms"),
           py::arg("context") = py::none(), py::arg("cancel") = py::none(), py::arg("hooks") = py::none())
      .def("submit", &Client::submit, py::arg("method"), py::arg("url"), py::arg("headers"), py::arg("body"),
           py::arg("idempotency_key"), py::arg("retry"), py::arg("follow"), py::arg("timeout_ms"),
           py::arg("bridge"), py::arg("future"), py::arg("context") = py::none(),
           py::arg("cancel") = py::none(), py::arg("hooks") = py::none())
      .def("submit_open", &Client::submit_open, py::arg("method"), py::arg("url"), py::arg("headers"),
           py::arg("body"), py::arg("idempotency_key"), py::arg("retry"), py::arg("follow"),
           py::arg("timeout_ms"), py::arg("bridge"), py::arg("future"), py::arg("context") = py::none(),
           py::arg("cancel") = py::none(), py::arg("hooks") = py::none());
}

}  // namespace humus_py
