#pragma once
// Owners of the C ABI's handles: each frees its object with the matching humus_*_free.

#include <humus_http.h>

#include <memory>
#include <string>

namespace humus::cli {

struct FreeRuntime {
  void operator()(humus_runtime* p) const { humus_runtime_free(p); }
};
struct FreeSettings {
  void operator()(humus_settings* p) const { humus_settings_free(p); }
};
struct FreeClient {
  void operator()(humus_client* p) const { humus_client_free(p); }
};
struct FreeRequest {
  void operator()(humus_request* p) const { humus_request_free(p); }
};
struct FreeResponse {
  void operator()(humus_response* p) const { humus_response_free(p); }
};
struct FreeError {
  void operator()(humus_error* p) const { humus_error_free(p); }
};
struct FreeString {
  void operator()(char* p) const { humus_string_free(p); }
};

using Runtime = std::unique_ptr<humus_runtime, FreeRuntime>;
using Settings = std::unique_ptr<humus_settings, FreeSettings>;
using Client = std::unique_ptr<humus_client, FreeClient>;
using Request = std::unique_ptr<humus_request, FreeRequest>;
using Response = std::unique_ptr<humus_response, FreeResponse>;
using Error = std::unique_ptr<humus_error, FreeError>;
using LibString = std::unique_ptr<char, FreeString>;

// "closed", "open", "half-open".
inline const char* circuit_name(int32_t state) {
  switch (state) {
    case HUMUS_CIRCUIT_CLOSED:
      return "closed";
    case HUMUS_CIRCUIT_OPEN:
      return "open";
    case HUMUS_CIRCUIT_HALF_OPEN:
      return "half-open";
    default:
      return "unknown";
  }
}

// The error's message, or its status name when it has none.
inline std::string describe(const humus_error* e) {
  if (e == nullptr) return "unknown error";
  std::string message = humus_error_message(e);
  return message.empty() ? humus_status_name(humus_error_status(e)) : message;
}

}  // namespace humus::cli
