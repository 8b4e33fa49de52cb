#include "retry/budget.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace humus::retry {
namespace {

constexpr int64_t kMaxTokenUnits = 1'000'000'000'000 * kBudgetUnitsPerToken;  // 1e12 tokens: 2·max fits
// The ratio budget's floor, at most 1e9 retries per window, and its ratio, at most 1: keeps
// ratio × requests + floor far from overflow.
constexpr int64_t kMaxReserveUnits = 1'000'000'000 * kBudgetUnitsPerToken;

// `value` tokens in millionths, rounded, clamped to [lo, hi]; NaN gives lo.
int64_t to_units(double value, int64_t lo, int64_t hi) {
  const double units = value * static_cast<double>(kBudgetUnitsPerToken);
  if (!(units >= static_cast<double>(lo))) return lo;
  if (units >= static_cast<double>(hi)) return hi;
  return std::clamp(static_cast<int64_t>(std::llround(units)), lo, hi);
}

}  // namespace

// --- TokenBucketBudget

TokenBucketBudget::TokenBucketBudget(double tokens, double ratio)
    : max_units_(to_units(tokens, 1, kMaxTokenUnits)),
      ratio_units_(to_units(ratio, 1, max_units_)),
      own_units_(max_units_),
      units_(own_units_) {}

TokenBucketBudget::TokenBucketBudget(double tokens, double ratio, std::atomic<int64_t>& units)
    : max_units_(to_units(tokens, 1, kMaxTokenUnits)),
      ratio_units_(to_units(ratio, 1, max_units_)),
      own_units_(0),
      units_(units) {}

int64_t TokenBucketBudget::initial_units(double tokens) { return to_units(tokens, 1, kMaxTokenUnits); }

Budget::Charge TokenBucketBudget::on_retryable() {
  int64_t current = units_.load(std::memory_order_relaxed);
  int64_t next = 0;
  do {
    // An empty bucket stays empty: skip the write, so an outage's refusals do not contend on the line.
    if (current == 0) return {false};
    next = current > kBudgetUnitsPerToken ? current - kBudgetUnitsPerToken : 0;
  } while (!units_.compare_exchange_weak(current, next, std::memory_order_relaxed));
  return {2 * next > max_units_};  // more than half remains, compared exactly
}

bool TokenBucketBudget::try_hedge() {
  int64_t current = units_.load(std::memory_order_relaxed);
  int64_t next = 0;
  do {
    if (2 * current <= max_units_) return false;  // at or below half: no hedge, no write
    next = current > kBudgetUnitsPerToken ? current - kBudgetUnitsPerToken : 0;
  } while (!units_.compare_exchange_weak(current, next, std::memory_order_relaxed));
  return true;
}

void TokenBucketBudget::on_success() {
  int64_t current = units_.load(std::memory_order_relaxed);
  int64_t next = 0;
  do {
    if (current >= max_units_) return;  // full: the common case while the dependency is healthy, no write
    next = std::min(max_units_, current + ratio_units_);
  } while (!units_.compare_exchange_weak(current, next, std::memory_order_relaxed));
}

double TokenBucketBudget::tokens() const {
  return static_cast<double>(units_.load(std::memory_order_relaxed)) /
         static_cast<double>(kBudgetUnitsPerToken);
}

// --- RatioBudget

RatioBudget::RatioBudget(Clock& clock, double ratio, double min_per_second, Duration window)
    : clock_(clock),
      ratio_units_(to_units(ratio, 0, kBudgetUnitsPerToken)),
      reserve_units_(
          to_units(min_per_second * std::chrono::duration<double>(window).count(), 0, kMaxReserveUnits)),
      width_(std::max(window / kBuckets, Duration(1))),
      origin_(clock.now()) {}

int64_t RatioBudget::epoch_now() const {
  const Duration since = clock_.now() - origin_;
  return since > Duration::zero() ? since / width_ : 0;
}

RatioBudget::Bucket& RatioBudget::current_locked(int64_t epoch) {
  latest_epoch_ = std::max(latest_epoch_, epoch);
  Bucket& bucket = buckets_[static_cast<size_t>(latest_epoch_ % kBuckets)];
  if (bucket.epoch != latest_epoch_) bucket = Bucket{latest_epoch_, 0, 0};
  return bucket;
}

RatioBudget::Totals RatioBudget::totals_locked(int64_t epoch) const {
  latest_epoch_ = std::max(latest_epoch_, epoch);
  Totals totals;
  for (const Bucket& bucket : buckets_) {
    // Slots hold at most one slice each; a slice older than the last kBuckets has left the window.
    if (bucket.epoch > latest_epoch_ - kBuckets) {
      totals.requests += bucket.requests;
      totals.retries += bucket.retries;
    }
  }
  return totals;
}

int64_t RatioBudget::headroom_units(const Totals& totals) const {
  // Requests in one window stay far below 2^63 / 1e6 (9e12), so the product cannot overflow.
  return ratio_units_ * totals.requests + reserve_units_ - totals.retries * kBudgetUnitsPerToken;
}

void RatioBudget::on_request() {
  const int64_t epoch = epoch_now();
  MutexLock lock(mu_);
  ++current_locked(epoch).requests;
}

bool RatioBudget::try_withdraw(const Charge& /*charge*/) {
  const int64_t epoch = epoch_now();
  MutexLock lock(mu_);
  // Counting this retry, the window's retries must stay within the allowance: Finagle's "balance covers
  // one withdrawal", so the share is a cap never crossed, not a threshold crossed by a fraction.
  if (headroom_units(totals_locked(epoch)) < kBudgetUnitsPerToken) return false;
  ++current_locked(epoch).retries;
  return true;
}

void RatioBudget::refund() {
  const int64_t epoch = epoch_now();
  MutexLock lock(mu_);
  Bucket& bucket = current_locked(epoch);
  if (bucket.retries > 0) --bucket.retries;
}

double RatioBudget::tokens() const {
  const int64_t epoch = epoch_now();
  MutexLock lock(mu_);
  const int64_t headroom = headroom_units(totals_locked(epoch));
  // Requests can leave the window before the retries they paid for: the balance shown never goes below 0.
  return static_cast<double>(std::max<int64_t>(headroom, 0)) / static_cast<double>(kBudgetUnitsPerToken);
}

// --- Factory

const char* budget_policy_name(BudgetPolicy policy) {
  switch (policy) {
    case BudgetPolicy::kTokenBucket:
      return "token_bucket";
    case BudgetPolicy::kRatio:
      return "ratio";
  }
  return "unknown";
}

Result<std::unique_ptr<Budget>> make_budget(const BudgetOptions& options, Clock& clock) {
  std::vector<std::string> bad;
  const bool ratio_ok = std::isfinite(options.ratio) && options.ratio > 0 && options.ratio <= 1;
  switch (options.policy) {
    case BudgetPolicy::kTokenBucket:
      if (!(std::isfinite(options.tokens) && options.tokens > 0)) bad.emplace_back("retry_budget.tokens");
      if (!ratio_ok) bad.emplace_back("retry_budget.ratio");
      if (!bad.empty()) break;
      return std::unique_ptr<Budget>(std::make_unique<TokenBucketBudget>(options.tokens, options.ratio));
    case BudgetPolicy::kRatio:
      if (!ratio_ok) bad.emplace_back("retry_budget.ratio");
      if (!(std::isfinite(options.min_per_second) && options.min_per_second >= 0)) {
        bad.emplace_back("retry_budget.min_per_second");
      }
      if (options.window <= Duration::zero()) bad.emplace_back("retry_budget.window");
      if (!bad.empty()) break;
      return std::unique_ptr<Budget>(
          std::make_unique<RatioBudget>(clock, options.ratio, options.min_per_second, options.window));
    default:
      bad.emplace_back("retry_budget.policy");
      break;
  }
  std::string message = "invalid retry budget:";
  for (const std::string& field : bad) message += " " + field;
  return Status(Code::kInvalidArgument, std::move(message), std::move(bad));
}

}  // namespace humus::retry
