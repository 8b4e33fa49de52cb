// The wait before a retry (docs/retries.md §6.2): exponential with full jitter. Without jitter every client that failed
// together retries together and the dependency meets the same spike on every round.
#pragma once

#include "common/clock.h"
#include "common/random.h"

namespace humus::retry {

// Immutable after construction; thread-safe (draw only reads, and Random is thread-safe).
class Backoff {
 public:
  // Negative durations are taken as zero. A `max` below `base` caps every wait at `max` (the settings
  // refuse that pair, §3.2, so this only keeps the arithmetic defined).
  Backoff(Duration base, Duration max);

  // The ceiling after attempt n (1-based): min(max, base·2ⁿ⁻¹). Attempts below 1 are taken as 1. Never
  // overflows: for large n (64, 1000, INT_MAX) it is `max`.
  Duration cap(int attempt) const;

  // A uniform draw in [0, cap(attempt)], both ends included, in whole nanoseconds, using exactly one
  // random.next(): wait_ns = floor(next · (cap_ns + 1) / 2⁶⁴). Conformance vectors pin the waits a seed
  // produces, so this formula is part of the behaviour: change it only with the vectors.
  Duration draw(int attempt, Random& random) const;

  Duration base() const { return base_; }
  Duration max() const { return max_; }

 private:
  Duration base_;
  Duration max_;
};

}  // namespace humus::retry
