// HTTP-dates (RFC 9110 §5.6.7), read by libcurl's date parser so the client accepts exactly what curl does.
#pragma once

#include <optional>
#include <string_view>

#include "common/clock.h"

namespace humus::transport {

// Parses an HTTP-date: the IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT" and the obsolete RFC 850 and asctime
// forms, plus the looser variants curl_getdate() accepts (missing weekday, numeric zones). A zone-less date
// is taken as GMT, never as local time. nullopt for anything curl refuses, for text with a NUL byte, and for
// text of 256 bytes or more (no date is that long; the bound keeps the parse on the stack). Dates outside
// WallTime's range (about 1677–2262 with nanosecond ticks) saturate to WallTime::min()/max(). The one second
// 1969-12-31T23:59:59Z is read as the epoch: curl_getdate uses -1 for "invalid". Thread-safe, no allocation.
std::optional<WallTime> parse_http_date(std::string_view text);

}  // namespace humus::transport
