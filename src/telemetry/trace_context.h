// W3C Trace Context (https://www.w3.org/TR/trace-context/): reading the caller's `traceparent` and writing
// the one each attempt sends, so the dependency sees exactly the span id the span sink reports (docs/telemetry.md §13.1).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/random.h"

namespace humus::telemetry {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

struct TraceParent {
  TraceId trace_id{};
  SpanId span_id{};     // the parent span: the caller's
  uint8_t flags = 0;    // bit 0: sampled
};

// The caller's traceparent, or nothing when it is not valid W3C: version 00 with exactly four fields, or a
// later version with at least four (the spec's forward compatibility); lowercase hex; neither id all zeros;
// version ff refused.
std::optional<TraceParent> parse_traceparent(std::string_view header);

// "00-<trace id>-<span id>-<flags>".
std::string format_traceparent(const TraceId& trace, const SpanId& span, uint8_t flags);

// Lowercase hex of the bytes (32 characters for a trace id, 16 for a span id).
std::string to_hex(const uint8_t* bytes, size_t size);
// The same into `out`, which holds 2 * size + 1 characters; NUL-terminated. No allocation.
void write_hex(const uint8_t* bytes, size_t size, char* out);
template <size_t N>
std::string to_hex(const std::array<uint8_t, N>& id) {
  return to_hex(id.data(), N);
}

// Fresh ids from `random`, never all zeros (the only invalid value).
TraceId new_trace_id(Random& random);
SpanId new_span_id(Random& random);

}  // namespace humus::telemetry
