// The C functions of the runtime, client and call sections of include/humus_http.h: runtimes, clients, blocking
// and asynchronous calls. Requests are in request_capi.cc, responses in response_capi.cc.
#include "capi/client_capi.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "capi/breaker_policy_adapter.h"
#include "capi/guard.h"
#include "capi/settings_capi.h"

using humus::Code;
using humus::Status;
using humus::capi::bad_handle;
using humus::capi::guard;
using humus::capi::live;
using humus::capi::null_argument;
using humus::capi::publish;
using humus::capi::report;
using humus::capi::retire;

namespace {

humus_response* new_response(humus::client::Response response, uint64_t max_body, SharedCancel cancel) {
  auto made = std::make_unique<humus_response>();
  made->response = std::move(response);
  made->max_body = max_body;
  made->cancel = std::move(cancel);
  return publish(made.release());
}

humus_status deliver(humus_client* c, const humus_request* r, humus::client::CallResult result,
                     humus_response** out, humus_error** err) {
  if (!result.ok()) {
    const int64_t retry_after_ms = std::chrono::duration_cast<std::chrono::milliseconds>(result.retry_after).count();
    return report(result.error, err, result.attempts, retry_after_ms, std::move(result.trace));
  }
  *out = new_response(std::move(*result.response), c->client->max_response_body(), r->cancel);
  return HUMUS_OK;
}

// How an asynchronous call's outcome reaches the caller's callback, on the loop thread. `loop`: the loop a
// streamed response's body is read on (humus_client_submit_open), else null: the response is whole, and goes
// back to the loop to be freed.
humus::client::CallDone completion(humus_client* c, humus_call_done on_done, void* user_data,
                                   humus::transport::EventLoop* loop) {
  std::shared_ptr<humus::transport::FreeOnLoop> home;
  if (loop == nullptr) home = c->client->runtime().loop().free_on_loop();
  return [on_done, user_data, loop, home = std::move(home),
          max_body = c->client->max_response_body()](humus::client::CallResult result) {
    if (result.ok()) {
      humus_response* resp = new_response(std::move(*result.response), max_body, nullptr);
      resp->loop = loop;
      resp->home = home;
      on_done(user_data, HUMUS_OK, resp, nullptr);
      return;
    }
    humus_error* error = nullptr;
    const int64_t retry_after_ms = std::chrono::duration_cast<std::chrono::milliseconds>(result.retry_after).count();
    const humus_status status = report(result.error, &error, result.attempts, retry_after_ms, std::move(result.trace));
    on_done(user_data, status, nullptr, error);
  };
}

// The handle checks every call entry point starts with; HUMUS_OK when the call may go on.
humus_status check_call(const char* function, humus_client* c, const humus_request* r, humus_error** err) {
  if (live(c) == nullptr) return bad_handle(function, "c", err);
  if (live(r) == nullptr) return bad_handle(function, "r", err);
  return HUMUS_OK;
}

}  // namespace

extern "C" {

HUMUS_API humus_status humus_runtime_new(const char* options_json, size_t len, humus_runtime** out,
                                         humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (out == nullptr) return null_argument("humus_runtime_new", "out", err);
    humus::Result<humus::client::RuntimeOptions> options =
        humus::client::runtime_options_from_json(options_json == nullptr ? std::string_view() : std::string_view(options_json, len));
    if (!options.ok()) return report(options.status(), err);
    *out = publish(new humus_runtime(std::move(options).value()));
    return HUMUS_OK;
  });
}

HUMUS_API void humus_runtime_free(humus_runtime* rt) {
  if (retire(rt)) delete rt;
}

HUMUS_API humus_status humus_runtime_advance_ms(humus_runtime* rt, int64_t ms, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(rt) == nullptr) return bad_handle("humus_runtime_advance_ms", "rt", err);
    humus::testing::VirtualClock* clock = rt->runtime.virtual_clock();
    if (clock == nullptr) return report(Status(Code::kMisuse, "humus_runtime_advance_ms: the runtime's clock is real"), err);
    if (ms < 0) return report(Status(Code::kInvalidArgument, "humus_runtime_advance_ms: ms must be >= 0", {"ms"}), err);
    clock->advance(std::chrono::milliseconds(ms));
    return HUMUS_OK;
  });
}

HUMUS_API int64_t humus_runtime_elapsed_ms(humus_runtime* rt) {
  if (live(rt) == nullptr) return -1;
  const humus::Instant now = rt->runtime.clock().now();
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - rt->runtime.started_at()).count();
}

namespace {

// The caller-driven loop of `rt`, started on first use; null (with *err set) when there is none.
humus::transport::EventLoop* caller_loop(const char* function, humus_runtime* rt, humus_status* status,
                                         humus_error** err) {
  if (live(rt) == nullptr) {
    *status = bad_handle(function, "rt", err);
    return nullptr;
  }
  if (!rt->runtime.options().caller_loop) {
    *status =
        report(Status(Code::kMisuse, std::string(function) + ": the runtime's loop has a thread of its own "
                                                             "(its options do not say \"loop\": \"caller\")"),
               err);
    return nullptr;
  }
  return &rt->runtime.loop();
}

}  // namespace

HUMUS_API humus_status humus_runtime_loop_fd(humus_runtime* rt, int* fd, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    humus_status status = HUMUS_OK;
    humus::transport::EventLoop* loop = caller_loop("humus_runtime_loop_fd", rt, &status, err);
    if (loop == nullptr) return status;
    if (fd == nullptr) return null_argument("humus_runtime_loop_fd", "fd", err);
    const int made = loop->dup_fd();
    if (made < 0) {
      return report(Status(Code::kResource, std::string("humus_runtime_loop_fd: cannot duplicate the loop's "
                                                        "descriptor: ") +
                                                std::strerror(errno)),
                    err);
    }
    *fd = made;
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_runtime_loop_run(humus_runtime* rt, int64_t* next_us, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    humus_status status = HUMUS_OK;
    humus::transport::EventLoop* loop = caller_loop("humus_runtime_loop_run", rt, &status, err);
    if (loop == nullptr) return status;
    if (next_us == nullptr) return null_argument("humus_runtime_loop_run", "next_us", err);
    if (loop->on_loop_thread()) {
      return report(Status(Code::kMisuse,
                           "humus_runtime_loop_run: called from inside the loop (a callback of "
                           "the runtime); return from the callback instead"),
                    err);
    }
    const humus::Instant next = loop->run_ready();
    const humus::Instant now = rt->runtime.clock().now();
    // Compared before subtracting: "work left" is Instant::min(), and min() - now overflows to the far
    // future.
    if (next == humus::Instant::max()) {
      *next_us = -1;
    } else if (next <= now) {
      *next_us = 0;
    } else {
      *next_us = std::chrono::ceil<std::chrono::microseconds>(next - now).count();
    }
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_client_new(humus_runtime* rt, const humus_settings* s, humus_client** out,
                                        humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(rt) == nullptr) return bad_handle("humus_client_new", "rt", err);
    if (live(s) == nullptr) return bad_handle("humus_client_new", "s", err);
    if (out == nullptr) return null_argument("humus_client_new", "out", err);
    humus::Result<std::unique_ptr<humus::client::Client>> client = humus::client::Client::create(rt->runtime, s->value);
    if (!client.ok()) return report(client.status(), err);
    auto made = std::make_unique<humus_client>();
    made->client = std::move(client).value();
    *out = publish(made.release());
    return HUMUS_OK;
  });
}

namespace {

// A client freed on its own event loop (inside a callback) cannot wait there for its calls: each try cancels
// what is left and, while calls remain, comes back after the loop has delivered their outcomes.
void free_on_loop(humus_client* c) {
  if (c->client->cancel_calls()) {
    delete c;
    return;
  }
  c->client->runtime().loop().post([c] { free_on_loop(c); });
}

}  // namespace

HUMUS_API void humus_client_free(humus_client* c) {
  // A registry's client is the registry's to free (humus_upstreams_free retires it first).
  if (const humus_client* found = live(c); found == nullptr || found->lent) return;
  if (!retire(c)) return;
  if (c->client->runtime().on_loop_thread()) {
    // After the tasks posted before: a streamed response freed just before its client closes first.
    c->client->runtime().loop().post([c] { free_on_loop(c); });
    return;
  }
  delete c;  // ~Client cancels and waits for its asynchronous calls
}

HUMUS_API humus_status humus_client_breaker_state(humus_client* c, int32_t* state) {
  return guard(nullptr, [&]() -> humus_status {
    if (live(c) == nullptr) return bad_handle("humus_client_breaker_state", "c", nullptr);
    if (state == nullptr) return null_argument("humus_client_breaker_state", "state", nullptr);
    *state = static_cast<int32_t>(c->client->breaker().state());
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_client_breaker_counts(humus_client* c, humus_breaker_counts* counts) {
  return guard(nullptr, [&]() -> humus_status {
    if (live(c) == nullptr) return bad_handle("humus_client_breaker_counts", "c", nullptr);
    if (counts == nullptr) return null_argument("humus_client_breaker_counts", "counts", nullptr);
    const humus_breaker_counts now = humus::capi::to_c_counts(c->client->breaker().counts());
    if (Status st = humus::capi::write_c_counts(now, *counts); !st.ok()) return report(st, nullptr);
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_client_budget_tokens(humus_client* c, double* tokens) {
  return guard(nullptr, [&]() -> humus_status {
    if (live(c) == nullptr) return bad_handle("humus_client_budget_tokens", "c", nullptr);
    if (tokens == nullptr) return null_argument("humus_client_budget_tokens", "tokens", nullptr);
    *tokens = c->client->budget().tokens();
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_client_bulkhead_limit(humus_client* c, uint32_t* limit) {
  return guard(nullptr, [&]() -> humus_status {
    if (live(c) == nullptr) return bad_handle("humus_client_bulkhead_limit", "c", nullptr);
    if (limit == nullptr) return null_argument("humus_client_bulkhead_limit", "limit", nullptr);
    *limit = c->client->bulkhead().limit();
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_client_do(humus_client* c, const humus_request* r, humus_response** out,
                                       humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (humus_status st = check_call("humus_client_do", c, r, err); st != HUMUS_OK) return st;
    if (out == nullptr) return null_argument("humus_client_do", "out", err);
    return deliver(c, r, c->client->execute(r->request, r->cancel.get()), out, err);
  });
}

HUMUS_API humus_status humus_client_open(humus_client* c, const humus_request* r, humus_response** out,
                                         humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (humus_status st = check_call("humus_client_open", c, r, err); st != HUMUS_OK) return st;
    if (out == nullptr) return null_argument("humus_client_open", "out", err);
    return deliver(c, r, c->client->open(r->request, r->cancel.get()), out, err);
  });
}

HUMUS_API humus_status humus_client_submit(humus_client* c, const humus_request* r, humus_call_done on_done,
                                           void* user_data, humus_call** call, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (humus_status st = check_call("humus_client_submit", c, r, err); st != HUMUS_OK) return st;
    if (on_done == nullptr) return null_argument("humus_client_submit", "on_done", err);
    auto handle = std::make_unique<humus_call>();
    handle->call = c->client->submit(r->request, completion(c, on_done, user_data, nullptr), r->cancel);
    if (call != nullptr) *call = publish(handle.release());
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_client_submit_open(humus_client* c, const humus_request* r, humus_call_done on_headers,
                                                void* user_data, humus_call** call, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (humus_status st = check_call("humus_client_submit_open", c, r, err); st != HUMUS_OK) return st;
    if (on_headers == nullptr) return null_argument("humus_client_submit_open", "on_headers", err);
    auto handle = std::make_unique<humus_call>();
    handle->call = c->client->submit_open(
        r->request, completion(c, on_headers, user_data, &c->client->runtime().loop()), r->cancel);
    if (call != nullptr) *call = publish(handle.release());
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_client_step_start(humus_client* c, const humus_request* r, humus_step** out,
                                               humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (humus_status st = check_call("humus_client_step_start", c, r, err); st != HUMUS_OK) return st;
    if (out == nullptr) return null_argument("humus_client_step_start", "out", err);
    auto step = std::make_unique<humus_step>();
    step->client = c;
    step->request = r;
    step->call = c->client->step(r->request, r->cancel.get());
    *out = publish(step.release());
    return HUMUS_OK;
  });
}

HUMUS_API humus_status humus_step_advance(humus_step* s, humus_response** out, int* wait_fd, int* wait_events,
                                          int64_t* wait_ms, humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(s) == nullptr) return bad_handle("humus_step_advance", "s", err);
    if (out == nullptr) return null_argument("humus_step_advance", "out", err);
    if (wait_fd == nullptr) return null_argument("humus_step_advance", "wait_fd", err);
    if (wait_events == nullptr) return null_argument("humus_step_advance", "wait_events", err);
    if (wait_ms == nullptr) return null_argument("humus_step_advance", "wait_ms", err);
    if (s->spent) {
      return report(Status(Code::kMisuse, "humus_step_advance: the step already returned its call's outcome"), err);
    }
    *out = nullptr;
    *wait_fd = -1;
    *wait_events = 0;
    *wait_ms = -1;
    if (s->call == nullptr) {
      s->spent = true;
      return deliver(s->client, s->request, s->client->client->open(s->request->request, s->request->cancel.get()),
                     out, err);
    }
    humus::transport::StepWait wait;
    if (!s->call->advance(wait)) {
      *wait_fd = wait.fd;
      *wait_events = (wait.read ? HUMUS_WAIT_READ : 0) | (wait.write ? HUMUS_WAIT_WRITE : 0);
      *wait_ms = wait.ms;
      return HUMUS_OK;
    }
    s->spent = true;
    return deliver(s->client, s->request, std::move(s->call->result()), out, err);
  });
}

HUMUS_API void humus_step_free(humus_step* s) {
  if (retire(s)) delete s;
}

HUMUS_API void humus_call_cancel(humus_call* call) {
  if (live(call) != nullptr && call->call) call->call->cancel();
}

HUMUS_API void humus_call_free(humus_call* call) {
  if (retire(call)) delete call;
}

}  // extern "C"
