// A C attempt-hooks table (humus_attempt_hooks) as the core's classify::AttemptHooks (docs/retries.md §6.7).
#pragma once

#include <memory>

#include "classify/attempt_hooks.h"
#include "common/status.h"
#include "humus_http.h"

namespace humus::capi {

// Owns user_data once made (destroy runs once, with the last holder). kInvalidArgument naming
// humus_attempt_hooks for a bad version, kProgram when both callbacks are NULL; on failure the caller keeps
// user_data.
Result<std::shared_ptr<const classify::AttemptHooks>> make_c_attempt_hooks(const humus_attempt_hooks& table);

}  // namespace humus::capi
