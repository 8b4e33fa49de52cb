// One call's progress through its attempts, waits and redirects, as a state machine that neither sends nor
// sleeps itself: it says what comes next (send this attempt, wait until then, or done). The blocking driver
// (Client::execute) and the asynchronous one (client/engine.h) run the same machine, so both obey the same
// rules: the docs/retries.md §6 order of admission → send → classify → breaker result → retry decision → wait.
#pragma once

#include <optional>

#include "breaker/breaker.h"
#include "bulkhead/bulkhead.h"
#include "classify/classification.h"
#include "client/request.h"
#include "common/cancel.h"
#include "faults/scenario.h"
#include "telemetry/call_trace.h"
#include "transport/wire.h"

namespace humus::client {

class Client;

struct Step {
  enum class Kind { kSend, kWait, kDone } kind = Kind::kDone;
  transport::AttemptLimits limits;  // kSend: the attempt's deadlines
  Instant until{};                  // kWait: when the next attempt may start
  CallResult result;                // kDone
};

// Not thread-safe: one driver advances it at a time.
class Call {
 public:
  Call(Client& client, const Request& request, CancelToken* cancel);

  // Checks the request (origin, headers, deadline) and builds its wire form: kDone when it is refused,
  // nothing when the driver may go on to acquire a bulkhead slot and then call admit().
  std::optional<Step> start();
  Instant deadline() const { return deadline_; }
  void hold(bulkhead::Slot slot) { slot_ = std::move(slot); }

  // The next attempt: kSend with the breaker's permit taken, or kDone (rejected, cancelled, deadline).
  Step admit();
  // What the attempt that admit() sent brought back. kWait before a retry, kSend for a redirect followed
  // within the origin (already admitted), or kDone. `body`: the rest of a streamed response's body
  // (Transport::open); a response that ends the call keeps it, and its breaker result waits for its end.
  Step on_sent(transport::WireResult sent, std::unique_ptr<transport::BodyStream> body = nullptr);
  // The wait of a kWait ended; `cut_short`: by the cancel token rather than the clock.
  Step on_waited(bool cut_short);

  // The attempt to send after a kSend.
  const transport::WireRequest& wire() const { return wire_; }

 private:
  Step done(CallResult result);
  Step fail(Status status, Duration retry_after = Duration::zero());
  Step give_up(Status why);  // a wait or a new attempt cut short: the buffered response, else `why`
  bool cancelled() const { return cancel_ != nullptr && cancel_->cancelled(); }
  // Reads a streamed body that may be replaced by a retry into `into`, up to one byte past the 64 KiB
  // that may be buffered (docs/bodies.md §7); `body` is reset when it ended. A failed read is returned.
  transport::BodyRead read_ahead(std::unique_ptr<transport::BodyStream>& body, std::string& into);
  // Counts an attempt's result now: its breaker verdict and the outcome metric. A failing policy's status.
  Status count(const classify::Classification& c);
  uint64_t body_size() const;  // of the request, for the metrics (0 when unknown)
  telemetry::Span attempt_span(WallTime start) const;  // the attributes known before the attempt is sent
  transport::InjectedFault draw_fault() const;          // what the call's fault scenario does to this attempt

  Client& client_;
  const Request& request_;
  CancelToken* const cancel_;
  Instant deadline_{};
  transport::WireRequest wire_;
  bool may_send_twice_ = false;
  bool body_replayable_ = true;  // no body source, or one with a rewind
  bool unprocessed_may_resend_ = true;
  int attempt_ = 0;      // of the current request (a redirect starts again at 1)
  int attempts_ = 0;     // of the whole call
  int redirects_ = 0;
  Instant attempt_started_{};  // when admit() let the current attempt go (http.client.request.duration)
  breaker::Permit permit_;
  std::optional<CallResult> last_;  // the previous attempt's outcome, buffered during a wait (docs/bodies.md §7)
  bulkhead::Slot slot_;
  bool started_budget_ = false;
  telemetry::CallTrace trace_;              // inactive without a span sink
  std::optional<faults::Scenario> scenario_;  // the humus.fault baggage member, when the runtime injects faults
};

}  // namespace humus::client
