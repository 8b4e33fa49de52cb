#include "retry/retry_after.h"

#include <cstdint>

#include "transport/http_date.h"

namespace humus::retry {
namespace {

bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// 1*DIGIT as seconds. Accumulation stops growing once past the cap, so no digit string can overflow.
Duration delta_seconds(std::string_view digits) {
  constexpr int64_t kCapSeconds = std::chrono::duration_cast<std::chrono::seconds>(kMaxRetryAfter).count();
  int64_t seconds = 0;
  for (char c : digits) {
    seconds = seconds * 10 + (c - '0');
    if (seconds > kCapSeconds) return kMaxRetryAfter;
  }
  return std::chrono::seconds(seconds);
}

// date - now, clamped to [0, kMaxRetryAfter]. Both may sit at WallTime's limits (a saturated date), so the
// difference is taken in unsigned ticks, where it cannot overflow once date > now.
Duration until(WallTime date, WallTime now) {
  if (date <= now) return Duration::zero();
  const auto date_ticks = static_cast<uint64_t>(date.time_since_epoch().count());
  const auto now_ticks = static_cast<uint64_t>(now.time_since_epoch().count());
  const uint64_t diff = date_ticks - now_ticks;
  constexpr auto kCapTicks =
      static_cast<uint64_t>(std::chrono::duration_cast<WallTime::duration>(kMaxRetryAfter).count());
  if (diff >= kCapTicks) return kMaxRetryAfter;
  return std::chrono::duration_cast<Duration>(WallTime::duration(static_cast<WallTime::rep>(diff)));
}

}  // namespace

std::optional<Duration> parse_retry_after(std::string_view value, WallTime now) {
  const std::string_view v = trim(value);
  if (v.empty()) return std::nullopt;
  if (all_digits(v)) return delta_seconds(v);
  // Every RFC 9110 date form starts with a day name. Anything else ("1.5", "-5", "10 s") is a malformed
  // delta, refused here rather than offered to curl's lenient parser, which reads "5 Nov 2026" as a date.
  const char first = v.front();
  if (!((first >= 'A' && first <= 'Z') || (first >= 'a' && first <= 'z'))) return std::nullopt;
  const std::optional<WallTime> date = transport::parse_http_date(v);
  if (!date) return std::nullopt;
  return until(*date, now);
}

}  // namespace humus::retry
