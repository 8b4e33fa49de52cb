#include "retry/latency_tracker.h"

#include <algorithm>
#include <cmath>

namespace humus::retry {

LatencyTracker::LatencyTracker(Clock& clock, Duration window)
    : clock_(clock), width_(std::max(window / kSlices, Duration(1))), origin_(clock.now()) {}

int64_t LatencyTracker::epoch_now() const {
  const Duration since = clock_.now() - origin_;
  return since > Duration::zero() ? since / width_ : 0;
}

int LatencyTracker::bucket_of(Duration latency) {
  const double us = std::chrono::duration<double, std::micro>(latency).count();
  if (!(us > 1)) return 0;
  // The smallest bucket whose upper edge, 2^(b/8) µs, is at least the latency.
  const int b = static_cast<int>(std::ceil(std::log2(us) * 8 - 1e-9));
  return std::clamp(b, 0, kBuckets - 1);
}

Duration LatencyTracker::upper_edge(int bucket) {
  const double us = std::exp2(static_cast<double>(bucket) / 8);
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(us));
}

void LatencyTracker::record(Duration latency) {
  const int b = bucket_of(latency);
  const int64_t epoch = epoch_now();
  MutexLock lock(mu_);
  Slice& s = slices_[static_cast<size_t>(epoch % kSlices)];
  if (s.epoch < epoch) {  // time never goes back: an older reading counts in the newest slice
    s = Slice{};
    s.epoch = epoch;
  }
  ++s.counts[static_cast<size_t>(b)];
  ++s.total;
}

int64_t LatencyTracker::samples() const {
  const int64_t epoch = epoch_now();
  MutexLock lock(mu_);
  int64_t n = 0;
  for (const Slice& s : slices_) {
    if (live_locked(s, epoch)) n += s.total;
  }
  return n;
}

std::optional<Duration> LatencyTracker::percentile(int percentile) const {
  const int64_t epoch = epoch_now();
  MutexLock lock(mu_);
  int64_t n = 0;
  for (const Slice& s : slices_) {
    if (live_locked(s, epoch)) n += s.total;
  }
  if (n < kMinSamples) return std::nullopt;
  // The rank of the percentile, 1-based: the smallest latency with at least percentile % of samples at or below it.
  const int64_t rank = std::max<int64_t>(1, (n * percentile + 99) / 100);
  int64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    for (const Slice& s : slices_) {
      if (live_locked(s, epoch)) seen += s.counts[static_cast<size_t>(b)];
    }
    if (seen >= rank) return upper_edge(b);
  }
  return upper_edge(kBuckets - 1);
}

}  // namespace humus::retry
