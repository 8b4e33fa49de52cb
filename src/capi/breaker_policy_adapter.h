// The breaker's side of the C ABI (docs/breaker.md §9.3): a C policy table (humus_breaker_policy) as the
// core's breaker::Policy, and the counts as humus_breaker_counts.
#pragma once

#include <memory>

#include "breaker/policy.h"
#include "common/status.h"
#include "humus_http.h"

namespace humus::capi {

// Validated: kInvalidArgument naming humus_breaker_policy for a bad version, kProgram for NULL callbacks.
// The returned policy owns user_data: `destroy` runs once, when the last holder lets go; on failure the caller
// keeps it.
Result<std::shared_ptr<const breaker::Policy>> make_c_policy(const humus_breaker_policy& table);

// The counts as the C ABI carries them (policy callbacks, log records, humus_client_breaker_counts).
humus_breaker_counts to_c_counts(const breaker::Counts& counts);
// Copies `counts` into a caller's struct up to the size of the version the caller set in `out.version`;
// kInvalidArgument naming "version" for 0 or a version newer than this library's.
Status write_c_counts(const humus_breaker_counts& counts, humus_breaker_counts& out);

}  // namespace humus::capi
