#include "transport/http_date.h"

#include <curl/curl.h>

#include <chrono>
#include <cstring>
#include <ctime>

namespace humus::transport {
namespace {

constexpr size_t kMaxDateLength = 256;

// Seconds since the epoch to WallTime without overflowing its tick count (curl accepts years like 99999).
WallTime to_wall_time(time_t epoch_seconds) {
  using std::chrono::seconds;
  // duration_cast truncates toward zero, so both bounds are whole seconds that convert back exactly.
  constexpr int64_t kMax = std::chrono::duration_cast<seconds>(WallTime::max().time_since_epoch()).count();
  constexpr int64_t kMin = std::chrono::duration_cast<seconds>(WallTime::min().time_since_epoch()).count();
  const auto s = static_cast<int64_t>(epoch_seconds);
  if (s > kMax) return WallTime::max();
  if (s < kMin) return WallTime::min();
  return WallTime(std::chrono::duration_cast<WallTime::duration>(seconds(s)));
}

}  // namespace

std::optional<WallTime> parse_http_date(std::string_view text) {
  if (text.empty() || text.size() >= kMaxDateLength) return std::nullopt;
  // curl reads a C string: an embedded NUL would make it parse a prefix and accept what follows unseen.
  if (text.find('\0') != std::string_view::npos) return std::nullopt;
  char buffer[kMaxDateLength];
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  const time_t parsed = curl_getdate(buffer, nullptr);
  if (parsed == static_cast<time_t>(-1)) return std::nullopt;
  return to_wall_time(parsed);
}

}  // namespace humus::transport
