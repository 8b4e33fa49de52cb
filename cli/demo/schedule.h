#pragma once
// The demo's phases over time: healthy -> slow -> failing -> recovering, scaled to the run's length.

#include <cstdint>

namespace humus::cli::demo {

enum class Phase { kHealthy, kSlow, kFailing, kRecovering };

inline const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kHealthy:
      return "healthy";
    case Phase::kSlow:
      return "slow";
    case Phase::kFailing:
      return "failing";
    case Phase::kRecovering:
      return "recovering";
  }
  return "?";
}

inline constexpr Phase kPhases[] = {Phase::kHealthy, Phase::kSlow, Phase::kFailing, Phase::kRecovering};

struct Schedule {
  int64_t duration_ms = 0;
  // Where each phase starts, in ms from the run's start; kPhases order.
  int64_t starts_ms[4] = {};

  // 20% healthy, 20% slow, 30% failing, 30% recovering, on whole seconds (so each line of the timeline
  // belongs to one phase): long enough an outage for the breaker to open and probe more than once, long
  // enough a recovery for it to close. `seconds` >= 5 gives every phase at least one second.
  static Schedule for_seconds(int64_t seconds) {
    Schedule s;
    s.duration_ms = seconds * 1000;
    const auto at = [&](int64_t tenths) { return (seconds * tenths + 5) / 10 * 1000; };  // rounded
    s.starts_ms[0] = 0;
    s.starts_ms[1] = at(2);
    s.starts_ms[2] = at(4);
    s.starts_ms[3] = at(7);
    return s;
  }

  Phase at(int64_t ms) const {
    for (int i = 3; i > 0; --i) {
      if (ms >= starts_ms[i]) return kPhases[i];
    }
    return Phase::kHealthy;
  }
  int64_t start_of(Phase p) const { return starts_ms[static_cast<int>(p)]; }
  int64_t end_of(Phase p) const {
    const int i = static_cast<int>(p);
    return i == 3 ? duration_ms : starts_ms[i + 1];
  }
};

}  // namespace humus::cli::demo
