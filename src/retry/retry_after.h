// The Retry-After header (RFC 9110 §10.2.3, docs/retries.md §6.3): how long a dependency asked us to wait.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "common/clock.h"

namespace humus::retry {

// Every parsed Retry-After saturates here (about 31.7 years). Far beyond any wait a call can make (timeout is
// at most 1 h, docs/settings.md §3), so a saturated value still reads as "too long" everywhere, and far enough below
// Duration's limit (about 292 years) that `now + retry_after` cannot overflow.
inline constexpr Duration kMaxRetryAfter = std::chrono::seconds(1'000'000'000);

// Reads a Retry-After value. Leading and trailing spaces and tabs are ignored. Either form of RFC 9110:
//  - delta-seconds, 1*DIGIT: that many seconds (leading zeros allowed; huge numbers saturate at
//    kMaxRetryAfter);
//  - an HTTP-date (transport::parse_http_date; it starts with a letter, as every RFC 9110 form does): the
//    time from `now` until then, 0 for a date in the past, at most kMaxRetryAfter.
// nullopt for anything else — empty, negative, "1.5", "+5", "10 s", "soon" — which the caller ignores (a
// malformed header is not an instruction). Text that starts like a number but is not 1*DIGIT is never handed
// to curl's lenient date parser. Thread-safe, no allocation.
std::optional<Duration> parse_retry_after(std::string_view value, WallTime now);

}  // namespace humus::retry
