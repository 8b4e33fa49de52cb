// The handles behind the runtime, client, request, cancel and response parts of the C ABI.
#pragma once

#include <memory>
#include <string>

#include "client/client.h"
#include "client/request.h"
#include "client/runtime.h"
#include "common/cancel.h"
#include "humus_http.h"

struct humus_runtime {
  explicit humus_runtime(humus::client::RuntimeOptions options) : runtime(std::move(options)) {}
  humus::client::Runtime runtime;
};

struct humus_client {
  std::unique_ptr<humus::client::Client> client;
};

struct humus_request {
  humus::client::Request request;
  humus_cancel* cancel = nullptr;
};

struct humus_cancel {
  humus::CancelToken token;
};

struct humus_call {
  std::shared_ptr<humus::client::AsyncCall> call;
};

struct humus_response {
  humus::client::Response response;
  size_t read_at = 0;           // bytes of response.body already handed out by humus_response_read
  uint64_t max_body = UINT64_MAX;  // the client's max_response_body, for humus_response_body of a stream
};
