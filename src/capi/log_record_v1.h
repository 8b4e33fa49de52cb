// humus_log_record as version 1 of the ABI laid it out, with the breaker counts embedded by value. A
// humus_log_sink declaring version 1 was compiled against this layout, so its records are built in it; a
// version 2 sink gets the header's humus_log_record, whose counts are behind a pointer and so may grow.
#pragma once

#include <cstddef>
#include <cstdint>

namespace humus::capi {

struct BreakerCountsV1 {
  uint32_t version;  // 1
  int32_t state;
  uint64_t successes;
  uint64_t failures;
  uint64_t consecutive_successes;
  uint64_t consecutive_failures;
  uint64_t timed_out_probes;
  uint32_t window_results;
  uint32_t window_failures;
};

struct LogRecordV1 {
  uint32_t version;  // 1
  const char* event;
  const char* message;
  const char* server_address;
  int32_t server_port;
  int32_t previous_state;
  int32_t new_state;
  BreakerCountsV1 counts;
  int64_t time_unix_ms;
  const char* upstream;
};

}  // namespace humus::capi
