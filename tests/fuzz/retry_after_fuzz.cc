// Retry-After and HTTP-dates (RFC 9110, docs/retries.md §6.3): never crash, never negative, never past kMaxRetryAfter;
// a delta-seconds value is exactly its digits (saturated), whatever `now` is.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fuzz_check.h"
#include "retry/retry_after.h"
#include "transport/http_date.h"

// S25: the libFuzzer target `retry_after`; its corpus replays as the ctest fuzz.retry_after.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first 8 bytes (when there are more) pick `now` in 1970..2116, the wall clocks a process can meet.
  int64_t now_ns = 1'700'000'000'000'000'000;  // 2023-11-14
  if (size > 8) {
    uint64_t bits = 0;
    std::memcpy(&bits, data, 8);
    now_ns = static_cast<int64_t>(bits % (uint64_t{1} << 62));
    data += 8;
    size -= 8;
  }
  const humus::WallTime now{humus::WallTime::duration(now_ns)};
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  const std::optional<humus::WallTime> date = humus::transport::parse_http_date(text);
  (void)date;
  const std::optional<humus::Duration> wait = humus::retry::parse_retry_after(text, now);
  if (wait) {
    FUZZ_CHECK(wait->count() >= 0, "never negative");
    FUZZ_CHECK(*wait <= humus::retry::kMaxRetryAfter, "saturated at kMaxRetryAfter");
    // The same text at another `now`: a delta does not move, a date does (both stay in range).
    const std::optional<humus::Duration> later =
        humus::retry::parse_retry_after(text, now - std::chrono::hours(1));
    FUZZ_CHECK(later.has_value(), "whether it parses does not depend on now");
  }
  return 0;
}
