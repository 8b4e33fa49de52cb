// One call's progress through its bulkhead slot, attempts, waits and redirects, as a state machine that neither
// sends, reads nor sleeps itself: it says what comes next (take a bulkhead slot, send this attempt, read a body
// ahead, wait until then, follow a redirect, or done). The blocking driver (Client::execute and Client::open)
// and the asynchronous one (async_call.h) run the same machine, so both obey the same rules: the
// docs/retries.md §6 order of bulkhead → admission → send → classify → breaker result → retry decision → wait,
// each attempt's end recorded in one place (end_attempt).
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "breaker/breaker.h"
#include "bulkhead/bulkhead.h"
#include "client/attempt_result.h"
#include "client/call_env.h"
#include "client/decision_trace.h"
#include "client/request.h"
#include "common/cancel.h"
#include "faults/scenario.h"
#include "retry/decision.h"
#include "telemetry/call_trace.h"
#include "transport/transport.h"
#include "transport/wire.h"

namespace humus::client {

// docs/bodies.md §7: a response body up to 64 KiB is buffered before a retry; one byte more tells a larger one.
inline constexpr size_t kRetryBufferLimit = 64 * 1024;
inline constexpr size_t kReadAheadBytes = kRetryBufferLimit + 1;

struct Step {
  enum class Kind {
    kAcquire,   // take a bulkhead slot, waiting until `until` at the latest (the call's deadline), then on_slot()
    kSend,      // send wire() within `limits`, then on_sent()
    kWait,      // wait until `until` (or a cancel), then on_waited()
    kReadAhead, // read held_body() onto held_bytes() up to kReadAheadBytes (read_ahead.h), then on_read_ahead()
    kRedirect,  // a redirect within the origin is followed: admit() its first attempt
    kDone,      // `result` is the call's outcome
    kPending,   // hedging: nothing to do but wait for the copies in flight (and ask hedge() at hedge_at())
  } kind = Kind::kDone;
  transport::AttemptLimits limits;  // kSend: the attempt's deadlines
  Instant until{};                  // kAcquire, kWait
  CallResult result;                // kDone
  // Hedging (docs/retries.md §6.8), only once allow_hedging() was called: kSend's copy, sent as wire(copy) and
  // answered through on_sent(copy, ...); and on any step, the copies in flight the driver must cancel now
  // (their results are the call's no more: on_sent(copy, ...) of one of them changes nothing).
  int copy = 0;
  std::vector<int> cancel;
};

// Not thread-safe: one driver advances it at a time.
class Call {
 public:
  Call(const CallEnv& env, const Request& request, CancelToken* cancel);

  // Checks the request (deadline, origin, headers) and builds its wire form: kDone when it is refused, else
  // kAcquire.
  Step start();
  // The bulkhead's answer to kAcquire: the slot, held until the call ends (or its streamed body does), and
  // the first attempt's admit(); or the refusal (full, deadline, cancelled), which ends the call.
  Step on_slot(Result<bulkhead::Slot> slot);
  // The next attempt: kSend with the breaker's permit taken, or kDone (rejected, cancelled, deadline).
  Step admit();
  // What the attempt that admit() sent brought back: kWait before a retry, kRedirect, kReadAhead, or kDone.
  // `body`: the rest of a streamed response's body (Transport::open or start_open); one that may be replaced by
  // a retry or a redirect is read ahead by the driver first (kReadAhead); a response that ends the call keeps
  // it, and its breaker result waits for its end.
  Step on_sent(transport::WireResult sent, std::unique_ptr<transport::ResponseBody> body = nullptr);
  // After kReadAhead: `last` is the last read (its n == 0 at the body's end, or its failure).
  Step on_read_ahead(transport::BodyRead last);
  transport::ResponseBody& held_body() { return *held_->body; }
  std::string& held_bytes() { return held_->sent.response.body; }
  // The wait of a kWait ended; `cut_short`: by the cancel token rather than the clock.
  Step on_waited(bool cut_short);

  // The attempt to send after a kSend.
  const transport::WireRequest& wire() const { return wire_; }

  // The driver gives the call up (humus_step_free): from now on it is cancelled, as by its token, so each
  // step the driver completes as cancelled (on_sent of a cut attempt, on_waited(true), ...) ends it.
  void abandon() { abandoned_ = true; }

  // Hedging (docs/retries.md §6.8). A driver that can keep several attempts in flight calls allow_hedging()
  // before start(); the call then hedges when settings.hedge is set and the request may be sent twice with no
  // streamed body. Each kSend then names its copy: send wire(copy), which lives as long as the call, and give
  // its result to on_sent(copy, ...). After each kSend, and after each on_sent() that returns kPending, ask
  // hedge() at hedge_at() (unset: no hedge to ask for now).
  void allow_hedging() { hedging_allowed_ = true; }
  const transport::WireRequest& wire(int copy) const { return copy == 0 ? wire_ : copies_[copy - 1]->wire; }
  std::optional<Instant> hedge_at() const;
  // Another copy of the attempt in flight: kSend, or kPending when none may go (the breaker turned it away,
  // the budget is at or below half, hedge.max copies are out, the request's max_attempts are used, too little
  // of the deadline is left, the caller cancelled, a hook failed).
  Step hedge();
  // What copy `copy` brought back. The first usable one decides the call as on_sent() does, and the other
  // copies in flight are cancelled (Step::cancel); a copy that failed in a way worth a retry while another is
  // still out is counted and the call waits for the other (kPending).
  Step on_sent(int copy, transport::WireResult sent);
  int copies_in_flight() const { return in_flight_; }

 private:
  // The attempt admit() or hedge() lets go at `now`, its permit taken: its fault, span, counts and trace record
  // (`budget`: the budget's balance the record shows), and the kSend with its limits.
  Step send(Instant now, breaker::Position admitted_at, double budget, bool hedge);
    Step done(CallResult result);  // gives the bulkhead slot back, unless a streamed body took it
  Step fail(Status status, Duration retry_after = Duration::zero());
  Step give_up(Status why);  // a wait or a new attempt cut short: the buffered response, else `why`
  Step stop(retry::Decision decision, Status why);  // no attempt is made: the decision counted, then give_up
  bool cancelled() const { return abandoned_ || (cancel_ != nullptr && cancel_->cancelled()); }

  // The one place an attempt's end is recorded: the breaker's verdict and the outcome metric — unless
  // `outcome` is empty, when the end of the streamed body that kept the permit counts them (body_stream.h) —
  // then the budget's view of the classification, the retry decision and its metric. The decision is taken
  // after the verdict counted, so a breaker policy that fails ends the call with its status (the result
  // counted a failure, the decision kStopped) and charges no budget.
  Result<retry::DecisionResult> end_attempt(std::optional<breaker::Outcome> outcome, const retry::DecisionInput& in);
  // An attempt the client itself ends, with a decision of its own (docs/retries.md §5.1): no classifier, no
  // budget. A failing breaker policy's status is not the call's error here: the call ends anyway.
  void end_attempt(breaker::Outcome outcome, retry::Decision decision);
  Status count(breaker::Outcome outcome);  // the verdict and its metric; a failing policy stops the call
  AttemptResult attempt_result() const;    // where the current attempt's result goes

  // The end of a failed attempt when the client decides it (cancelled, past the deadline, its own limits).
  std::optional<Step> ended_by_client(transport::WireResult& sent, Instant after);
  // What comes after an attempt the classifier judged: its end recorded, then a retry, redirect or the end.
  using Body = std::unique_ptr<transport::ResponseBody>;  // a streamed body, while the call decides its fate
  Instant attempt_ended(const transport::WireResult& sent);  // its duration metric and span end; now
  // What the attempt brought, classified: read ahead first when it may be replaced, then on_classified().
  Step judge(transport::WireResult sent, Body body, Instant after, bool read_ahead_done);
  Step on_classified(const classify::Classification& c, transport::WireResult sent, Body body, Instant after);
  // Whether a response is a redirect this call follows (redirect_of), whose body then goes before it is.
  bool follows(const transport::WireResult& sent) const;
  // The request a response asks to be sent next, within the origin and the redirect limit, or nothing.
  std::optional<transport::WireRequest> redirect_of(const CallResult& outcome) const;
  Step follow(transport::WireRequest next, Response& got);  // got: the 3xx that asked for it, its head kept
  bool omits(std::string_view name) const;  // whether the request omits the header (Request::omitted_headers)
  uint64_t body_size() const;  // of the request, for the metrics (0 when unknown)
  // The attempt hooks (docs/retries.md §6.7), the settings' then the request's. run_before gives the attempt
  // about to be sent (number attempt_ + 1) its own headers, which attempt_ended puts back.
  Status run_before();
  void run_after(const classify::Attempt& seen) const;
  telemetry::Span attempt_span(WallTime start) const;  // the attributes known before the attempt is sent
  transport::InjectedFault draw_fault() const;          // what the call's fault scenario does to this attempt

  const CallEnv& env_;
  const Request& request_;
  CancelToken* const cancel_;
  bool abandoned_ = false;
  Instant deadline_{};
  transport::WireRequest wire_;
  bool may_send_twice_ = false;
  bool body_replayable_ = true;  // no body source, or one with a rewind
  bool unprocessed_may_resend_ = true;
  int attempt_ = 0;      // of the current request (a redirect starts again at 1)
  int attempts_ = 0;     // of the whole call
  std::vector<Redirect> history_;  // the redirects followed so far (at most kMaxRedirects)
  Instant attempt_started_{};  // when admit() let the current attempt go (http.client.request.duration)
  breaker::Permit permit_;
  std::optional<CallResult> last_;  // the previous attempt's outcome, buffered during a wait (docs/bodies.md §7)
  std::optional<Headers> unhooked_headers_;  // wire_'s own headers while an attempt sends its hooks' copy
  struct Held {  // an attempt's response during kReadAhead
    transport::WireResult sent;
    Body body;
    classify::Classification verdict;
    Instant after{};
  };
  std::optional<Held> held_;
  bulkhead::Slot slot_;
  bool started_budget_ = false;
  telemetry::CallTrace trace_;              // inactive without a span sink
  TraceRecorder decisions_;                 // the call's decision trace (docs/trace.md), always recorded
  std::optional<breaker::Position> counted_;  // where count() left the breaker, for the trace
  std::optional<faults::Scenario> scenario_;  // the humus.fault baggage member, when the runtime injects faults

  // Hedging (docs/retries.md §6.8). An attempt in flight beside others keeps here what the call keeps of its
  // one attempt otherwise (permit, start, span, trace record, the request as sent); unstash() puts it back.
  struct Copy {
    int id = 0;  // 1-based: copies_[id - 1]
    transport::WireRequest wire;
    breaker::Permit permit;
    Instant started{};
    telemetry::Span span;
    std::optional<AttemptRecord> record;
    bool in_flight = true;
  };
  int stash();  // the attempt just admitted becomes a copy in flight: its id
  void unstash(Copy& c);
  // Ends every other copy in flight, without a verdict: their transfers are the driver's to cancel.
  void drop_others();
  // A copy that failed worth a retry while another is out: counted, no decision of its own.
  Step superseded(const classify::Classification& c);
  bool hedging_allowed_ = false;
  bool hedging_ = false;  // this call hedges
  std::vector<std::unique_ptr<Copy>> copies_;  // stable: the driver sends wire(copy) until its result comes
  int in_flight_ = 0;
  Instant last_sent_{};  // the latest copy's send: the next hedge is due a delay after it
  std::vector<int> cancel_now_;  // copies drop_others() ended, for the step the call returns next
};

}  // namespace humus::client
