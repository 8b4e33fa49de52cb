// One guard around every extern "C" body: nothing thrown inside the core crosses the C boundary.
// bad_alloc becomes HUMUS_E_NO_MEMORY, a StatusError its status; anything else HUMUS_E_INTERNAL with what it said.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "capi/error.h"

namespace humus::capi {

template <typename Body>
humus_status guard(humus_error** err, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    try {
      return report(Status(Code::kNoMemory, "out of memory"), err);
    } catch (...) {
      return HUMUS_E_NO_MEMORY;
    }
  } catch (const StatusError& e) {
    try {
      return report(e.status(), err);
    } catch (...) {
      return static_cast<humus_status>(e.status().code());
    }
  } catch (const std::exception& e) {
    try {
      return report(Status(Code::kInternal, std::string("internal error: ") + e.what()), err);
    } catch (...) {
      return HUMUS_E_INTERNAL;
    }
  } catch (...) {
    try {
      return report(Status(Code::kInternal, "internal error: unknown exception"), err);
    } catch (...) {
      return HUMUS_E_INTERNAL;
    }
  }
}

// A NULL argument the function cannot do without: HUMUS_E_INVALID_ARGUMENT naming it.
inline humus_status null_argument(const char* function, const char* argument, humus_error** err) {
  return report(Status(Code::kInvalidArgument, std::string(function) + ": " + argument + " is NULL", {argument}),
                err);
}

}  // namespace humus::capi
