// The retry budget (docs/retries.md §6.4): bounds the retries of every call to one dependency together, so that when
// the dependency fails every call makes about one attempt instead of max_attempts, and retries do not
// multiply its load at the moment it can least take it. One budget per client, shared by every call.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"

namespace humus::retry {

// Every implementation is thread-safe and cheap: it is consulted once per attempt of every call.
class Budget {
 public:
  virtual ~Budget() = default;
  // The first attempt of each request a call sends (a followed redirect is a request of its own, §2);
  // never a retry.
  virtual void on_request() = 0;
  // An attempt the breaker classified `success`.
  virtual void on_success() = 0;
  // What on_retryable() left: for the token bucket, whether the balance right after this charge allows a
  // retry — read in the same atomic step as the charge, so concurrent charges cannot answer for each other.
  struct Charge {
    bool allows_retry = true;
  };
  // An attempt classified `retry`, whether or not a retry follows (what the dependency did): the token
  // bucket charges one token for it.
  virtual Charge on_retryable() = 0;
  // A retry is about to be made after `charge`: answers whether the budget allows it. The ratio budget
  // withdraws it in the same step (atomically: concurrent callers cannot overdraw); the token bucket answers
  // what its charge saw.
  virtual bool try_withdraw(const Charge& charge) = 0;
  // A retry try_withdraw() allowed is not made after all (its wait would pass the deadline, or the server
  // asked for too long a wait): the ratio budget gives it back, so only retries actually made count.
  virtual void refund() = 0;
  // Both steps for one attempt classified `retry`. Answers whether the retry may be made.
  bool try_retry() { return try_withdraw(on_retryable()); }
  // A hedged copy is about to be sent (docs/retries.md §6.8): answers whether the budget allows it, and if so
  // charges it as a retry, in one atomic step. The token bucket allows it only while MORE than half of its
  // tokens remain, then takes one; the ratio budgets withdraw one retry as for any retry.
  virtual bool try_hedge() { return try_withdraw(Charge{}); }
  // The balance, for telemetry and conformance vectors: tokens for the token bucket, retries still
  // allowed right now for the ratio budget.
  virtual double tokens() const = 0;
};

// Amounts are kept in millionths of a token, so refills of 0.1 add up exactly (ten of them make one token,
// where doubles would make 0.9999999999999999 and move the "more than half" threshold) and the balance
// fits one atomic word.
inline constexpr int64_t kBudgetUnitsPerToken = 1'000'000;

// gRPC retry throttling: starts full at `tokens`; on_retryable takes one token (never below zero); a retry
// is allowed only while MORE than half of `tokens` remains; on_success adds `ratio`, capped at full.
// on_request does nothing. `tokens` is clamped to [1e-6, 1e12] and `ratio` to [1e-6, tokens], each rounded
// to the nearest millionth; make_budget refuses values the settings refuse. Lock-free.
class TokenBucketBudget final : public Budget {
 public:
  explicit TokenBucketBudget(double tokens = 10, double ratio = 0.1);
  // The balance kept in `units` instead (a shared segment's, docs/shared.md §22.1), which must outlive the
  // budget; it is not reset: the segment's creator filled it with initial_units(tokens).
  TokenBucketBudget(double tokens, double ratio, std::atomic<int64_t>& units);
  static int64_t initial_units(double tokens);

  void on_request() override {}
  void on_success() override;
  Charge on_retryable() override;
  bool try_withdraw(const Charge& charge) override { return charge.allows_retry; }
  bool try_hedge() override;
  void refund() override {}
  double tokens() const override;

 private:
  const int64_t max_units_;
  const int64_t ratio_units_;
  // Relaxed everywhere: the balance is a lone counter and nothing else is published through it; every
  // change is a read-modify-write, and RMWs on one atomic are totally ordered whatever the memory order,
  // so no charge or refill is lost and each CAS computes its result from the latest balance. The same holds
  // across processes: a lock-free std::atomic<int64_t> is address-free, so one in shared memory works.
  std::atomic<int64_t> own_units_;
  std::atomic<int64_t>& units_;  // own_units_ or a shared segment's
};

// Finagle's RetryBudget (jfast's retry_budget_ratio): a retry is allowed while, counting it, the retries of
// the last `window` stay within ratio × (requests of the last window) + min_per_second × window-seconds.
// The second term is a floor so a quiet client can still retry at all. on_request deposits one request;
// an allowed try_retry withdraws one retry (a refused one leaves no trace); on_success does nothing.
// Time is kept in 10 buckets of window/10 on the injected clock: an event is forgotten between 0.9 and
// 1.0 window after it happened. A short mutex guards the buckets; the clock is read outside it.
// `ratio` is clamped to [0, 1] and the floor to [0, 1e9] retries per window, each rounded to millionths.
class RatioBudget final : public Budget {
 public:
  static constexpr int kBuckets = 10;

  explicit RatioBudget(Clock& clock, double ratio = 0.2, double min_per_second = 1,
                       Duration window = std::chrono::seconds(10));

  void on_request() override;
  void on_success() override {}
  Charge on_retryable() override { return {}; }
  bool try_withdraw(const Charge& charge) override;
  void refund() override;
  double tokens() const override;

 private:
  struct Bucket {
    int64_t epoch = -1;  // which width-long slice of time the counts belong to; -1: never used
    int64_t requests = 0;
    int64_t retries = 0;
  };
  struct Totals {
    int64_t requests = 0;
    int64_t retries = 0;
  };

  int64_t epoch_now() const;
  // The bucket for the current epoch, reset if it still holds an older slice. Time never goes back: a
  // thread that read the clock before another one had advanced the buckets counts in the newest slice.
  Bucket& current_locked(int64_t epoch) REQUIRES(mu_);
  Totals totals_locked(int64_t epoch) const REQUIRES(mu_);
  // ratio × requests + floor − retries, in millionths of a retry.
  int64_t headroom_units(const Totals& totals) const;

  Clock& clock_;
  const int64_t ratio_units_;
  const int64_t reserve_units_;  // min_per_second × window-seconds
  const Duration width_;         // window / kBuckets, at least 1 ns
  const Instant origin_;
  mutable Mutex mu_;
  mutable int64_t latest_epoch_ GUARDED_BY(mu_) = 0;
  std::array<Bucket, kBuckets> buckets_ GUARDED_BY(mu_){};
};

enum class BudgetPolicy : int32_t { kTokenBucket, kRatio };

// "token_bucket", "ratio" (the JSON names, §3).
const char* budget_policy_name(BudgetPolicy policy);

// The `retry_budget` setting (§3). Which fields apply depends on the policy.
struct BudgetOptions {
  BudgetPolicy policy = BudgetPolicy::kTokenBucket;
  double tokens = 10;  // token_bucket
  double ratio = 0.1;  // token_bucket: refill per success; ratio: share of recent requests (default 0.2)
  double min_per_second = 1;                   // ratio
  Duration window = std::chrono::seconds(10);  // ratio

  static BudgetOptions token_bucket_defaults() { return BudgetOptions{}; }
  static BudgetOptions ratio_defaults() {
    BudgetOptions options;
    options.policy = BudgetPolicy::kRatio;
    options.ratio = 0.2;
    return options;
  }
};

// Builds the budget a client holds. Checks the fields its policy uses (tokens > 0; ratio in (0, 1];
// min_per_second >= 0; window > 0; all finite) and reports every bad one at once as kInvalidArgument,
// named by its JSON key ("retry_budget.tokens"). The token bucket ignores `clock`; the ratio budget keeps
// a reference to it, which must outlive the budget. Thread-safe.
Result<std::unique_ptr<Budget>> make_budget(const BudgetOptions& options, Clock& clock);

}  // namespace humus::retry
