// Which requests may be sent twice (docs/retries.md §4): safe to repeat and possible to repeat. This is about the
// request, never about what the dependency answered, so a POST without an idempotency key is never charged
// twice whatever the classifier says.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/headers.h"

namespace humus::retry {

// RFC 9110 §9.2.2 idempotent methods: GET, HEAD, OPTIONS, TRACE, PUT, DELETE. Case-sensitive, because
// RFC 9110 §9.1 makes method tokens case-sensitive: "get" is a different (extension) method that the
// server need not treat as GET, so it is not vouched for. Bindings that accept lowercase methods for
// convenience must uppercase them before they reach the core. Thread-safe.
bool is_idempotent_method(std::string_view method);

// True when the request carries an Idempotency-Key or X-Idempotency-Key field (names case-insensitive)
// with a non-empty value. An empty (or all-whitespace) key gives the server nothing to deduplicate on,
// so it does not vouch for a repeat. Thread-safe.
bool has_idempotency_key(const Headers& request_headers);

// The per-call `retry` option (§4).
enum class RetryOverride : int32_t {
  kDefault,  // the rules decide
  kForbid,   // exactly one attempt
  kForce,    // the caller vouches that a repeat is safe; the budget, deadline and breaker still apply
};

// Whether a later attempt may send this request again.
// `body_replayable`: true when there is no body, or the client owns a copy of it, or the caller gave a
// rewind callback; false for a one-shot stream.
// kDefault: safe (idempotent method or idempotency key) and possible (body_replayable).
// kForbid:  false.
// kForce:   body_replayable. Vouching makes a request safe, not possible: a body that was consumed cannot
//           be sent again, so a force on an unreplayable body still makes one attempt.
// Thread-safe.
bool may_send_twice(std::string_view method, const Headers& request_headers, bool body_replayable,
                    RetryOverride retry_override);

}  // namespace humus::retry
