// Durations (docs/settings.md §3): parse_duration never crashes, accepts nothing negative, and every duration it reads
// formats to a text that reads back to the same value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/duration.h"
#include "fuzz_check.h"

// S25: the libFuzzer target `duration`; its corpus replays as the ctest fuzz.duration.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  humus::Result<humus::Duration> d = humus::parse_duration(text);
  if (!d.ok()) {
    FUZZ_CHECK(!d.status().message().empty(), "a refusal says why");
    return 0;
  }
  FUZZ_CHECK(d->count() >= 0, "no negative duration");
  const std::string formatted = humus::format_duration(*d);
  humus::Result<humus::Duration> again = humus::parse_duration(formatted);
  FUZZ_CHECK(again.ok(), formatted.c_str());
  FUZZ_CHECK(*again == *d, formatted.c_str());
  return 0;
}
