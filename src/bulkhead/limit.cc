#include "bulkhead/limit.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace humus::bulkhead {
namespace {

uint32_t clamp_to(const LimitBounds& b, uint32_t n) { return std::clamp(n, b.min, b.max); }

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

bool Window::add(const Sample& s) {
  latency_sum += seconds(s.latency);
  max_in_flight = std::max(max_in_flight, s.in_flight);
  dropped = dropped || s.dropped;
  return ++samples >= kWindowSamples;
}

// --- Aimd -------------------------------------------------------------------------------------------------

Aimd::Aimd(LimitBounds bounds) : bounds_(bounds), limit_(clamp_to(bounds, bounds.initial)) {}

uint32_t Aimd::on_sample(const Sample& s) {
  if (!window_.add(s)) return limit_;
  if (window_.dropped) {
    limit_ = std::max(bounds_.min, static_cast<uint32_t>(std::floor(limit_ * kBackoff)));
  } else if (window_.in_use(limit_) && limit_ < bounds_.max) {
    ++limit_;
  }
  window_.reset();
  return limit_;
}

// --- Gradient2 --------------------------------------------------------------------------------------------

Gradient2::Gradient2(LimitBounds bounds)
    : bounds_(bounds), estimate_(clamp_to(bounds, bounds.initial)), limit_(clamp_to(bounds, bounds.initial)) {}

uint32_t Gradient2::on_sample(const Sample& s) {
  if (!window_.add(s)) return limit_;
  const Window w = window_;
  window_.reset();
  short_ = w.average();
  if (first_) {
    first_ = false;
    long_ = short_;
  } else {
    long_ += 2.0 / (kLongWindow + 1) * (short_ - long_);  // an exponential average over about kLongWindow windows
  }
  // Latency fell well below what the long average remembers: forget the bad period faster.
  if (long_ > 2 * short_) long_ *= kLongDecay;

  const double gradient = short_ > 0 ? std::clamp(kTolerance * long_ / short_, 0.5, 1.0) : 1.0;
  const double next = estimate_ * gradient + kQueueSize;
  double estimate = (1 - kSmoothing) * estimate_ + kSmoothing * next;
  // A limit not in use may fall (latency says the dependency is past its best) but not grow.
  if (!w.in_use(limit_)) estimate = std::min(estimate, estimate_);
  estimate_ = std::clamp(estimate, static_cast<double>(bounds_.min), static_cast<double>(bounds_.max));
  limit_ = static_cast<uint32_t>(std::floor(estimate_));
  return limit_;
}

std::unique_ptr<Limit> make_limit(Algorithm algorithm, LimitBounds bounds) {
  if (algorithm == Algorithm::kAimd) return std::make_unique<Aimd>(bounds);
  return std::make_unique<Gradient2>(bounds);
}

}  // namespace humus::bulkhead
