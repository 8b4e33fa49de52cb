// humus_http._native, the owners of the C handles: each frees its humus_* object with that object's own
// humus_*_free (a humus_error, settings, a request, a response, an asynchronous call, a cancel token).
#pragma once

#include <memory>

#include "humus_http.h"

namespace humus_py {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const noexcept { Free(p); }
};
using ErrorPtr = std::unique_ptr<humus_error, Deleter<humus_error, humus_error_free>>;
using SettingsPtr = std::unique_ptr<humus_settings, Deleter<humus_settings, humus_settings_free>>;
using RequestPtr = std::unique_ptr<humus_request, Deleter<humus_request, humus_request_free>>;
using ResponsePtr = std::unique_ptr<humus_response, Deleter<humus_response, humus_response_free>>;
using CallPtr = std::unique_ptr<humus_call, Deleter<humus_call, humus_call_free>>;
using CancelPtr = std::unique_ptr<humus_cancel, Deleter<humus_cancel, humus_cancel_free>>;

}  // namespace humus_py
