#include "telemetry/trace_context.h"

#include <algorithm>
#include <cstring>

namespace humus::telemetry {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase is not valid W3C
}

// Reads exactly `out.size()` bytes of lowercase hex.
template <size_t N>
bool read_hex(std::string_view text, std::array<uint8_t, N>& out) {
  if (text.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    const int hi = hex_value(text[2 * i]);
    const int lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

template <size_t N>
bool all_zero(const std::array<uint8_t, N>& id) {
  return std::all_of(id.begin(), id.end(), [](uint8_t b) { return b == 0; });
}

template <size_t N>
void fill(std::array<uint8_t, N>& id, Random& random) {
  do {
    for (size_t i = 0; i < N; i += 8) {
      const uint64_t bits = random.next();
      std::memcpy(id.data() + i, &bits, std::min<size_t>(8, N - i));
    }
  } while (all_zero(id));
}

}  // namespace

std::optional<TraceParent> parse_traceparent(std::string_view h) {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 characters.
  constexpr size_t kLength = 55;
  if (h.size() < kLength || h[2] != '-' || h[35] != '-' || h[52] != '-') return std::nullopt;
  std::array<uint8_t, 1> version{};
  if (!read_hex(h.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  // Version 00 has exactly these fields; a later version may append "-..." fields this reader ignores.
  if (version[0] == 0 ? h.size() != kLength : h.size() > kLength && h[kLength] != '-') return std::nullopt;
  TraceParent p;
  std::array<uint8_t, 1> flags{};
  if (!read_hex(h.substr(3, 32), p.trace_id) || !read_hex(h.substr(36, 16), p.span_id) ||
      !read_hex(h.substr(53, 2), flags)) {
    return std::nullopt;
  }
  if (all_zero(p.trace_id) || all_zero(p.span_id)) return std::nullopt;
  p.flags = flags[0];
  return p;
}

namespace {

// The two lowercase hex digits of every byte: one 2-byte copy per byte (each span hexes ~56 bytes).
constexpr std::array<std::array<char, 2>, 256> kHexPairs = [] {
  constexpr char kDigits[] = "0123456789abcdef";
  std::array<std::array<char, 2>, 256> t{};
  for (size_t b = 0; b < 256; ++b) t[b] = {kDigits[b >> 4], kDigits[b & 0xf]};
  return t;
}();

}  // namespace

void write_hex(const uint8_t* bytes, size_t size, char* out) {
  for (size_t i = 0; i < size; ++i) std::memcpy(out + 2 * i, kHexPairs[bytes[i]].data(), 2);
  out[2 * size] = '\0';
}

std::string to_hex(const uint8_t* bytes, size_t size) {
  std::string out(2 * size, '0');
  write_hex(bytes, size, out.data());  // writes the NUL into the string's own terminator slot
  return out;
}

std::string format_traceparent(const TraceId& trace, const SpanId& span, uint8_t flags) {
  char out[56];  // "00-" 32 "-" 16 "-" 2, and the NUL
  out[0] = '0';
  out[1] = '0';
  out[2] = '-';
  write_hex(trace.data(), trace.size(), out + 3);
  out[35] = '-';
  write_hex(span.data(), span.size(), out + 36);
  out[52] = '-';
  write_hex(&flags, 1, out + 53);
  return std::string(out, 55);
}

TraceId new_trace_id(Random& random) {
  TraceId id;
  fill(id, random);
  return id;
}

SpanId new_span_id(Random& random) {
  SpanId id;
  fill(id, random);
  return id;
}

}  // namespace humus::telemetry
