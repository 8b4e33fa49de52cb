// The handles behind the runtime, client, request, cancel and response parts of the C ABI. Each starts with
// its magic word (capi/handle.h) and is published when made, retired when freed.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "capi/handle.h"
#include "client/body_ring.h"
#include "client/client.h"
#include "client/request.h"
#include "client/runtime.h"
#include "common/cancel.h"
#include "humus_http.h"

struct humus_runtime {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kRuntime;
  explicit humus_runtime(humus::client::RuntimeOptions options) : runtime(std::move(options)) {}
  humus::capi::Magic magic = kMagic;
  humus::client::Runtime runtime;
};

struct humus_client {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kClient;
  humus::capi::Magic magic = kMagic;
  std::unique_ptr<humus::client::Client> client;
  bool lent = false;  // an upstreams registry's: freed with the registry, humus_client_free ignores it
};

// Shared, not owned: a request, the calls made with it and the caller's humus_cancel each hold the token, so
// freeing any of them first leaves the others a live token.
using SharedCancel = std::shared_ptr<humus::CancelToken>;

struct humus_request {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kRequest;
  humus::capi::Magic magic = kMagic;
  humus::client::Request request;
  SharedCancel cancel;  // humus_request_set_cancel's, or null
};

struct humus_cancel {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kCancel;
  humus::capi::Magic magic = kMagic;
  SharedCancel token = std::make_shared<humus::CancelToken>();
};

struct humus_call {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kCall;
  humus::capi::Magic magic = kMagic;
  std::shared_ptr<humus::client::AsyncCall> call;
};

// A stepped call (humus_client_step_start). `call` is null for a client whose calls cannot be stepped: the
// first advance then runs the call whole, as humus_client_open.
struct humus_step {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kStep;
  humus::capi::Magic magic = kMagic;
  humus_client* client = nullptr;
  const humus_request* request = nullptr;
  std::unique_ptr<humus::client::SteppedCall> call;
  bool spent = false;  // an advance returned the call's outcome
};

struct humus_response {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kResponse;
  humus::capi::Magic magic = kMagic;
  SharedCancel cancel;  // a stream's token, which its reads use: declared first, so it outlives the stream
  humus::client::Response response;
  size_t read_at = 0;              // bytes of response.body already handed out by humus_response_read
  uint64_t max_body = UINT64_MAX;  // the client's max_response_body, for humus_response_body of a stream
  // humus_client_submit_open's: the runtime's event loop, where the body is read (humus_response_read_async)
  // and the response freed. Null for every other response.
  humus::transport::EventLoop* loop = nullptr;
  // humus_client_submit's: given back to the loop thread that made it, to be freed there (free_on_loop.h).
  // Null for every other response, and on a virtual clock.
  std::shared_ptr<humus::transport::FreeOnLoop> home;
  // A humus_response_read_async is pending. Acquire/release: the read that clears it has finished with the
  // response's fields before the next read, on any thread, starts.
  std::atomic<bool> reading{false};
  // humus_response_read_ahead's: the ring its body is read into on the loop, taken from with
  // humus_response_take. Set once, before any take; closed on the loop with the body.
  std::shared_ptr<humus::client::BodyRing> ring;
};
