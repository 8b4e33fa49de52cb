// What the policies cost one attempt: a breaker admission plus its result, a budget decision, a backoff
// draw, and all of them together as the call loop pays them. The goal (issue: the core) is <= 100 ns per
// attempt for all of them together, uncontended. Run: build/release/bench/policy_bench
#include <benchmark/benchmark.h>

#include "breaker/breaker.h"
#include "classify/classification.h"
#include "common/clock.h"
#include "common/random.h"
#include "retry/backoff.h"
#include "retry/budget.h"
#include "retry/decision.h"

namespace {

using namespace humus;  // NOLINT(google-build-using-namespace): a benchmark file

breaker::Breaker& shared_breaker() {
  static breaker::Breaker b(breaker::Breaker::Options{}, nullptr, RealClock::instance());
  return b;
}

retry::TokenBucketBudget& shared_budget() {
  static retry::TokenBucketBudget budget(10, 0.1);
  return budget;
}

void BM_BreakerAdmitRecord(benchmark::State& state) {
  breaker::Breaker& b = shared_breaker();
  for (auto _ : state) {
    const breaker::Admission a = b.admit();
    benchmark::DoNotOptimize(b.record(a.permit, breaker::Outcome::kSuccess));
  }
}
BENCHMARK(BM_BreakerAdmitRecord)->Threads(1)->Threads(2);

void BM_BudgetDecision(benchmark::State& state) {
  retry::TokenBucketBudget& budget = shared_budget();
  const retry::Backoff backoff(std::chrono::milliseconds(100), std::chrono::seconds(2));
  SeededRandom random(1);
  retry::DecisionInput in;
  in.classification.retry = classify::RetryVerdict::kAgain;
  in.classification.breaker = breaker::Outcome::kFailure;
  in.may_send_twice = true;
  in.attempt = 1;
  in.max_attempts = 3;
  in.now = Instant(std::chrono::seconds(1));
  in.deadline = in.now + std::chrono::seconds(10);
  in.max_retry_after = std::chrono::seconds(2);
  for (auto _ : state) {
    budget.on_success();  // keeps the bucket in its allowing range, as a healthy dependency does
    benchmark::DoNotOptimize(retry::decide(in, backoff, budget, random));
  }
}
BENCHMARK(BM_BudgetDecision)->Threads(1)->Threads(2);

void BM_BackoffDraw(benchmark::State& state) {
  const retry::Backoff backoff(std::chrono::milliseconds(100), std::chrono::seconds(2));
  Random& random = system_random();
  int attempt = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(backoff.draw(attempt, random));
    attempt = attempt % 6 + 1;
  }
}
BENCHMARK(BM_BackoffDraw)->Threads(1)->Threads(2);

// One successful attempt as the call loop pays for it: admission, result, budget credit, retry decision.
void BM_AttemptTogether(benchmark::State& state) {
  breaker::Breaker& b = shared_breaker();
  retry::TokenBucketBudget& budget = shared_budget();
  const retry::Backoff backoff(std::chrono::milliseconds(100), std::chrono::seconds(2));
  Random& random = system_random();
  retry::DecisionInput in;
  in.classification.retry = classify::RetryVerdict::kDone;
  in.may_send_twice = true;
  in.max_attempts = 3;
  in.max_retry_after = std::chrono::seconds(2);
  for (auto _ : state) {
    const breaker::Admission a = b.admit();
    benchmark::DoNotOptimize(b.record(a.permit, breaker::Outcome::kSuccess));
    budget.on_success();
    in.now = RealClock::instance().now();
    in.deadline = in.now + std::chrono::seconds(10);
    benchmark::DoNotOptimize(retry::decide(in, backoff, budget, random));
    benchmark::DoNotOptimize(backoff.draw(1, random));
  }
}
BENCHMARK(BM_AttemptTogether)->Threads(1)->Threads(2);

}  // namespace

BENCHMARK_MAIN();
