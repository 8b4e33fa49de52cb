// What the call loop asks after each attempt (docs/retries.md §6): another attempt, after which wait, or stop — and
// why, since every answer is counted in humus.retry.decisions (§13.2).
#pragma once

#include <cstdint>

#include "classify/classification.h"
#include "common/clock.h"
#include "common/random.h"
#include "retry/backoff.h"
#include "retry/budget.h"

namespace humus::retry {

enum class Decision : int32_t {
  kDone,       // no retry: the classifier said done, or the request may not be sent twice, or its body did
               // not fit the 64 KiB buffer, or its Retry-After is over max_retry_after
  kAgain,      // retry after `wait` (not yet a retry: the call may still be cancelled during the wait)
  kThrottled,  // the budget refused the retry
  kExhausted,  // the request used max_attempts
  kExpired,    // the wait would end at or after the call's deadline
  kStopped,    // never produced by decide(): the client's verdict when the breaker rejects an attempt or
               // the caller cancels
};

// "done", "again", "throttled", "exhausted", "expired", "stopped": the metric's attribute values.
const char* decision_name(Decision decision);

struct DecisionInput {
  classify::Classification classification;
  bool may_send_twice = false;  // may_send_twice() of the request (repeat.h)
  bool body_too_large = false;  // the response body did not fit 64 KiB: returned intact, not retried (§7)
  int attempt = 1;              // 1-based, the attempt that just finished
  int max_attempts = 1;
  Instant now{};
  Instant deadline{};          // the call's deadline
  Duration max_retry_after{};  // §3: the longest Retry-After worth waiting for
};

// What set a kAgain's wait (docs/trace.md): the backoff's draw; the backoff's draw from a range that
// reached backoff.max (the attempt number no longer lengthens the wait); the dependency's Retry-After,
// longer than the draw. kNone for every other decision.
enum class WaitSource : int32_t { kNone, kBackoff, kCapped, kRetryAfter };

// "none", "backoff", "capped", "retry_after".
const char* wait_source_name(WaitSource source);

struct DecisionResult {
  Decision decision = Decision::kDone;
  Duration wait = Duration::zero();  // kAgain: the wait before the next attempt; zero otherwise
  WaitSource source = WaitSource::kNone;
};

// Decides, in this order (the first that applies wins):
//  1. classification.retry is done                    → kDone; the budget is not touched.
//  Otherwise the attempt was classified retry, and budget.on_retryable() is called, always, before anything
//  else: the budget counts what the dependency did, so an unsafe request or a last attempt still charges
//  the token bucket.
//  2. !may_send_twice or body_too_large               → kDone.
//  3. attempt >= max_attempts                         → kExhausted.
//  4. !budget.try_withdraw(charge)                    → kThrottled (a later step that makes no retry refunds).
//  5. retry_after > max_retry_after                   → kDone (the response is returned as it came, §6.3).
//  6. wait = max(backoff.draw(attempt), retry_after)  — the only step that draws a random number, so a
//     seed pins the waits of conformance vectors.
//  7. now + wait >= deadline                          → kExpired (§6.5). "Ends exactly at the deadline" is
//     too late: the next attempt would start with no time left and could do nothing but time out.
//  8. otherwise                                       → kAgain with `wait`.
// A negative retry_after (the classifier layer refuses it, §5.4) is taken as none.
// decide() neither deposits nor refills: the client calls budget.on_request() before each request's first
// attempt and budget.on_success() when an attempt's breaker verdict is success (which, for a response, is
// known when its body is read or closed, §7). Thread-safe as far as `budget` and `random` are.
DecisionResult decide(const DecisionInput& input, const Backoff& backoff, Budget& budget, Random& random);

}  // namespace humus::retry
