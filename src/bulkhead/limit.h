// The adaptive bulkhead's limit algorithms (docs/bulkhead.md §11.1): how many calls may be in flight, moved by
// what each call that held a slot reports when it gives the slot back. Two algorithms, after the ideas of
// Netflix's concurrency-limits and failsafe-go's adaptive limiter (described there, written here anew):
//  - Aimd: additive increase while calls go well with the limit in use, multiplicative decrease on dropped calls
//    (a timeout or a 503): it reacts to the dependency saying "too much", not to latency.
//  - Gradient2: the ratio of a long-term to a short-term average of the calls' latency (the gradient) scales
//    the limit, plus a small queue allowance: a latency rising above its long-term level shrinks the limit
//    before anything times out, and the limit grows back while latency stays at that level.
// Both are pure: a sample carries its own latency (measured by the bulkhead on its injected clock), so the same
// samples give the same path on any machine.
#pragma once

#include <cstdint>
#include <memory>

#include "common/clock.h"

namespace humus::bulkhead {

// What a call that held a slot reports as it gives the slot back.
struct Sample {
  Duration latency{};     // the slot held: from its grant to its return (docs/bulkhead.md §11.1)
  uint32_t in_flight = 0;  // slots held as it was given back, itself included
  bool dropped = false;    // the call ended in a timeout or a 503: the dependency shed it
};

// Not thread-safe: the bulkhead calls it under its own lock.
class Limit {
 public:
  virtual ~Limit() = default;
  // The limit now, within [min, max].
  [[nodiscard]] virtual uint32_t limit() const = 0;
  // Takes one sample in and returns the new limit.
  virtual uint32_t on_sample(const Sample& s) = 0;
};

enum class Algorithm { kGradient2, kAimd };  // docs/settings.md: bulkhead.algorithm's order

// The bounds every algorithm keeps to; 1 <= min <= max (the settings' checks), `initial` is clamped into them.
struct LimitBounds {
  uint32_t initial = 50;
  uint32_t min = 4;
  uint32_t max = 200;
};

// Both algorithms decide once per window of kWindowSamples samples, as Netflix's limits do behind their windowed
// wrapper: one call's latency is noise, and a limit moved per call overshoots by as many calls as complete within
// one latency (the limit doubles per round trip, then every call of the overshoot is a drop).
inline constexpr int kWindowSamples = 10;

// One window's samples, summed.
struct Window {
  double latency_sum = 0;   // seconds
  uint32_t max_in_flight = 0;
  bool dropped = false;
  int samples = 0;

  // Adds `s`; true when the window is full (then read it, and reset()).
  bool add(const Sample& s);
  double average() const { return samples > 0 ? latency_sum / samples : 0; }
  // A limit in use had at least half its slots held at some sample of the window: only then does the window
  // say whether more would be too much.
  bool in_use(uint32_t limit) const { return uint64_t{max_in_flight} * 2 >= limit; }
  void reset() { *this = Window(); }
};

// Additive increase, multiplicative decrease, once per window:
//  - a window with a dropped call: limit = max(min, floor(limit · kBackoff));
//  - else, when the limit was in use: limit = min(max, limit + 1);
//  - else unchanged: a client that uses a tenth of its limit learns nothing about the dependency's capacity.
class Aimd final : public Limit {
 public:
  static constexpr double kBackoff = 0.9;
  explicit Aimd(LimitBounds bounds);
  uint32_t limit() const override { return limit_; }
  uint32_t on_sample(const Sample& s) override;

 private:
  const LimitBounds bounds_;
  uint32_t limit_;
  Window window_;
};

// Gradient2, once per window. Latencies are in seconds as doubles; the estimate is a double, the limit its floor.
//  - short = the window's average latency: the latency now;
//  - long  = an exponential average of the windows' averages over the last kLongWindow windows (the first window
//            sets it): the latency the dependency has when it is not overloaded. When long > 2 · short (latency
//            fell a lot), long decays by kLongDecay per window, so the gradient recovers in a few windows instead
//            of hundreds;
//  - gradient = clamp(kTolerance · long / short, 0.5, 1) (1 while short is 0);
//  - estimate = (1 − kSmoothing) · estimate + kSmoothing · (estimate · gradient + kQueueSize), within
//    [min, max]; limit = floor(estimate). A window in which the limit was not in use may lower the estimate, never
//    raise it: a client using a tenth of its limit learns nothing about room for more, but a latency that climbs
//    says the dependency is past its best whatever this client's share of its load.
// A dropped call is a sample like any other: its latency (a timeout's is long) is what pulls the limit down.
class Gradient2 final : public Limit {
 public:
  static constexpr int kLongWindow = 600;
  static constexpr double kLongDecay = 0.95;
  static constexpr double kTolerance = 1.5;
  static constexpr double kSmoothing = 0.2;
  static constexpr double kQueueSize = 4;
  explicit Gradient2(LimitBounds bounds);
  uint32_t limit() const override { return limit_; }
  uint32_t on_sample(const Sample& s) override;

  // For tests and the bench: the two averages, in seconds (0 before the first window).
  double short_rtt() const { return short_; }
  double long_rtt() const { return long_; }

 private:
  const LimitBounds bounds_;
  double estimate_;
  uint32_t limit_;
  double short_ = 0;
  double long_ = 0;
  bool first_ = true;
  Window window_;
};

std::unique_ptr<Limit> make_limit(Algorithm algorithm, LimitBounds bounds);

}  // namespace humus::bulkhead
