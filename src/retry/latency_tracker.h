// The latencies a client saw of its origin, for a hedge delay given as a percentile (docs/retries.md §6.8): a
// log-bucket histogram over a sliding window, fed by the attempts the breaker counted a success (sent to the
// answer's head). Buckets grow by 2^(1/8) (a percentile is read within 9 % of its true value) from 1 µs to about
// 2.3 hours; the window is kSlices slices of window/kSlices, the oldest forgotten as a new one starts. A short
// mutex guards the counts; the clock is read outside it. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "common/clock.h"
#include "common/mutex.h"

namespace humus::retry {

class LatencyTracker {
 public:
  static constexpr int kBuckets = 8 * 33;  // 2^(1/8) steps from 1 µs to 2^33 µs
  static constexpr int kSlices = 3;
  // No percentile is answered from fewer samples than this: a hedge waits for a picture of the origin.
  static constexpr int64_t kMinSamples = 20;

  explicit LatencyTracker(Clock& clock, Duration window = std::chrono::seconds(30));

  void record(Duration latency);
  // The `percentile` (1..99) of the window's latencies — the upper edge of the bucket it falls in — or nothing
  // while the window holds fewer than kMinSamples.
  std::optional<Duration> percentile(int percentile) const;
  int64_t samples() const;  // in the window

  static int bucket_of(Duration latency);  // 0..kBuckets-1
  static Duration upper_edge(int bucket);  // the longest latency the bucket holds

 private:
  struct Slice {
    int64_t epoch = -1;  // which window/kSlices-long slice of time it counts; -1: never used
    int64_t total = 0;
    std::array<int32_t, kBuckets> counts{};
  };
  int64_t epoch_now() const;
  // Slices older than the window read as empty.
  bool live_locked(const Slice& s, int64_t epoch) const REQUIRES(mu_) { return s.epoch > epoch - kSlices; }

  Clock& clock_;
  const Duration width_;
  const Instant origin_;
  mutable Mutex mu_;
  std::array<Slice, kSlices> slices_ GUARDED_BY(mu_){};
};

}  // namespace humus::retry
