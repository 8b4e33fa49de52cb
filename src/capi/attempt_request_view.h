// The humus_attempt_request a C `before` hook receives: a view of a classify::AttemptRequest, with a
// NUL-terminated copy of the method (the URL and the headers are std::strings already).
#pragma once

#include <string>

#include "capi/handle.h"
#include "classify/attempt_hooks.h"
#include "humus_http.h"

// Lent to the hook for its call only: live (capi/handle.h) from construction to destruction, so a pointer
// kept past the callback reads as no request.
struct humus_attempt_request {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kAttemptRequest;

  explicit humus_attempt_request(humus::classify::AttemptRequest& r) : request(r) {
    humus::capi::publish(this);
  }
  ~humus_attempt_request() { (void)humus::capi::retire(this); }

  humus_attempt_request(const humus_attempt_request&) = delete;
  humus_attempt_request& operator=(const humus_attempt_request&) = delete;

  humus::capi::Magic magic = kMagic;
  humus::classify::AttemptRequest& request;
};
