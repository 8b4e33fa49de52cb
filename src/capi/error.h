// The humus_error object behind the C ABI, and how a Status becomes one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "humus_http.h"

struct humus_error {
  humus_status status = HUMUS_OK;
  std::string message;
  std::vector<std::string> fields;
  int32_t attempts = 0;
  int64_t retry_after_ms = 0;
};

namespace humus::capi {

// Hands `status` to the caller: writes a new humus_error to *err (when err is not NULL), records it as this
// thread's last error, and returns the status's code.
humus_status report(const Status& status, humus_error** err, int32_t attempts = 0, int64_t retry_after_ms = 0);

}  // namespace humus::capi
