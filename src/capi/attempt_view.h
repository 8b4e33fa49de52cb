// The humus_attempt a C classifier receives: a view of a classify::Attempt, with NUL-terminated copies of the
// strings the C accessors return (the Attempt's string_views need not be NUL-terminated).
#pragma once

#include <string>

#include "capi/handle.h"
#include "classify/classification.h"
#include "humus_http.h"

// Lent to the classifier for its call only: live (capi/handle.h) from construction to destruction, so a
// pointer kept past the callback reads as no attempt.
struct humus_attempt {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kAttempt;

  // The copies are made up front rather than on first access so that concurrent reads of one attempt (a
  // binding handing it to another thread during the callback) never race. A method fits the small-string
  // buffer and a response has no error message, so the common case allocates nothing. May throw bad_alloc.
  explicit humus_attempt(const humus::classify::Attempt& a)
      : attempt(a), method(a.method), error_message(a.error_message) {
    humus::capi::publish(this);
  }
  ~humus_attempt() { (void)humus::capi::retire(this); }

  humus_attempt(const humus_attempt&) = delete;
  humus_attempt& operator=(const humus_attempt&) = delete;

  humus::capi::Magic magic = kMagic;
  const humus::classify::Attempt& attempt;
  const std::string method;
  const std::string error_message;
};
