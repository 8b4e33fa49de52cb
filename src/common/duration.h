// Durations as configuration writes them: "250ms", "5s", "1m", "1.5s" (docs/settings.md §3).
#pragma once

#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace humus {

// Parses one or more <decimal number><unit> parts, summed ("5s", "1.5s", "1m30s"), units ns, us (or µs), ms,
// s, m, h. Refused: empty text, a sign, a number without a unit, spaces, a value that is not a whole number
// of nanoseconds, and anything past the largest Duration. Never throws. The message quotes the text.
Result<Duration> parse_duration(std::string_view text);

// The shortest exact form: the count of the largest unit (h, m, s, ms, us, ns) that divides the duration,
// e.g. "2s", "1500ms", "90s", "1h", "0s"; a negative duration gets a leading '-'. parse_duration reads every
// non-negative result back to the same value.
std::string format_duration(Duration d);

}  // namespace humus
