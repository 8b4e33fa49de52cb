// The humus_error object behind the C ABI, and how a Status becomes one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capi/handle.h"
#include "client/decision_trace.h"
#include "common/status.h"
#include "humus_http.h"

struct humus_error {
  static constexpr humus::capi::Magic kMagic = humus::capi::Magic::kError;
  humus::capi::Magic magic = kMagic;
  humus_status status = HUMUS_OK;
  std::string message;
  std::vector<std::string> fields;
  int32_t attempts = 0;
  int64_t retry_after_ms = 0;
  std::shared_ptr<const humus::client::DecisionTrace> trace;  // the failed call's, or null (docs/trace.md)
  bool lent = false;  // humus_last_error's copy: the library's to free, so humus_error_free ignores it
};

namespace humus::capi {

// Hands `status` to the caller: writes a new humus_error to *err (when err is not NULL), records a copy as
// this thread's last error (humus_last_error, kept for callers of the first ABI), and returns the status's
// code.
humus_status report(const Status& status, humus_error** err, int32_t attempts = 0, int64_t retry_after_ms = 0,
                    std::shared_ptr<const client::DecisionTrace> trace = nullptr);

}  // namespace humus::capi
