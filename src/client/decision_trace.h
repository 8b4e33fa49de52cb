// A call's reasoning, one record per attempt (docs/trace.md): what was sent, how it ended, how it was
// classified, what the breaker and the budget said, and what the call decided next. Recorded by Call as it
// runs, whether or not anybody reads it, so it must stay cheap: plain values, one allocation for a call of
// up to one attempt and no redirect (the request's method and URL are the call's own, moved in at its end;
// a redirect copies the hop it leaves). The C ABI renders it as JSON on demand (its trace_json.h); nothing
// here formats text.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "breaker/breaker.h"
#include "classify/classification.h"
#include "common/clock.h"
#include "common/status.h"
#include "retry/decision.h"
#include "transport/wire.h"

namespace humus::client {

// Where a Retry-After came from: the response's own header, or a classifier that set one without it.
enum class RetryAfterSource { kNone, kHeader, kClassifier };

// One request the call sent (the first, then one per redirect followed), as the call wrote its URL: a
// renderer removes the user-info (telemetry/redact.h).
struct TraceHop {
  std::string method;
  std::string url;
};

struct AttemptRecord {
  Duration start{};    // from the call's start
  int hop = 0;         // DecisionTrace::hop(): 0 the request itself, n the n-th redirect
  bool resend = false; // a retry of the same hop (its attempt number above 1)
  // Times the request reached the wire: 0 when no connection carried it (the breaker rejected it, a connect
  // or TLS handshake failed or timed out, it never started).
  int wire_sends = 0;

  // How it ended: an HTTP status, or the error that took its place (Code::kOk with status 0: not sent).
  int status = 0;
  Code error = Code::kOk;
  Duration duration{};

  // The classification, when a classifier judged the attempt.
  bool classified = false;
  classify::Classification verdict;
  RetryAfterSource retry_after_source = RetryAfterSource::kNone;

  // The breaker's state and generation when the attempt was admitted (or rejected), and after its result
  // was counted: absent while a streamed body still holds the verdict (docs/bodies.md §7), or when no
  // result was counted.
  std::optional<breaker::Position> breaker_at;  // absent: the call stopped before asking the breaker
  std::optional<breaker::Position> breaker_after;
  double budget_before = 0;  // the retry budget's balance (Budget::tokens) before and after
  double budget_after = 0;

  bool rejected = false;  // the breaker turned it away: the decision reads "rejected"
  bool hedge = false;       // a hedged copy, sent while another copy of the request was out (retries.md §6.8)
  bool superseded = false;  // another copy decided the call: the decision reads "hedged"
  retry::Decision decision = retry::Decision::kDone;
  Duration wait{};  // before the next attempt, when the decision is kAgain
  retry::WaitSource wait_source = retry::WaitSource::kNone;
  Duration deadline_left{};  // when the decision was taken
};

// The records and hops are kept inline for the common call (one attempt, no redirect), the rest in vectors.
struct DecisionTrace {
  TraceHop request;                 // hop 0
  std::vector<TraceHop> redirects;  // hop n is redirects[n - 1]
  int hops = 0;                     // hops recorded (0 for a call refused before it started)
  AttemptRecord first;              // record 0
  std::vector<AttemptRecord> more;  // record n is more[n - 1]
  size_t records = 0;

  // Hop `i`, or null past the hops recorded.
  const TraceHop* hop(int i) const {
    if (i < 0 || i >= hops) return nullptr;
    return i == 0 ? &request : &redirects[static_cast<size_t>(i - 1)];
  }
  size_t size() const { return records; }
  const AttemptRecord& at(size_t i) const { return i == 0 ? first : more[i - 1]; }
  void push(AttemptRecord r) {
    if (records++ == 0) {
      first = std::move(r);
    } else {
      more.push_back(std::move(r));
    }
  }
};

// Builds one call's trace as Call moves through its steps. Not thread-safe: Call's driver owns it.
class TraceRecorder {
 public:
  void start(Instant now, Instant deadline);
  // A redirect is followed: `method` and `url` are the hop it leaves.
  void redirect(const std::string& method, const std::string& url);
  // An attempt admitted by the breaker, about to be sent; `attempt`: its number within its hop, 1-based.
  void admitted(Instant now, int attempt, breaker::Position at, double budget, bool hedge = false);
  // The admitted attempt's result is not the call's: another copy answered, or was still out when it failed.
  void superseded();
  // Hedged copies in flight together: the call sets aside the record admitted() opened, and puts it back.
  std::optional<AttemptRecord> take_open() { return std::exchange(open_, std::nullopt); }
  void put_open(std::optional<AttemptRecord> record) { open_ = std::move(record); }
  // An attempt that was never sent: rejected by the breaker (decision kStopped, `rejected`), or not started
  // because the call was cancelled, its deadline passed, its body could not be sent again or a hook failed.
  void not_sent(Instant now, Code why, retry::Decision decision, bool rejected, std::optional<breaker::Position> at,
                double budget);
  // What the admitted attempt brought (again, when a body read ahead breaks off: the lost connection it became).
  void ended(Duration took, int wire_sends);
  void outcome(int status, Code error);
  void classified(const classify::Classification& c, bool retry_after_header);
  // The decision taken after the admitted attempt; `after` absent when no breaker result was counted.
  void decided(Instant now, retry::Decision decision, Duration wait, retry::WaitSource source,
               std::optional<breaker::Position> after, double budget);
  // The trace, for the call's result: once, when the call ends (the recorder is spent). `method` and `url`:
  // the call's current hop, which the call no longer needs.
  std::shared_ptr<const DecisionTrace> take(std::string method, std::string url);

 private:
  std::shared_ptr<DecisionTrace> trace_ = std::make_shared<DecisionTrace>();
  std::optional<AttemptRecord> open_;  // the admitted attempt, until its decision
  Instant started_{};
  Instant deadline_{};
};

}  // namespace humus::client
