#include "client/call.h"

#include <algorithm>
#include <utility>

#include "client/body_stream.h"
#include "client/call_headers.h"
#include "client/redirect.h"
#include "common/duration.h"
#include "telemetry/redact.h"

namespace humus::client {
namespace {

Status cancelled_status() { return Status(Code::kCancelled, "the call was cancelled"); }

// What an adaptive bulkhead learns from the call (docs/bulkhead.md §11.1): a timeout or a 503 is a drop; a call
// that sent nothing, was cancelled or rejected by the breaker says nothing of the dependency's latency.
bulkhead::Outcome slot_outcome(const CallResult& r, int attempts) {
  if (attempts == 0) return bulkhead::Outcome::kIgnored;
  if (r.response) return r.response->status == 503 ? bulkhead::Outcome::kDropped : bulkhead::Outcome::kDone;
  switch (r.error.code()) {
    case Code::kTimeout:
      return bulkhead::Outcome::kDropped;
    case Code::kCancelled:
    case Code::kRejected:
      return bulkhead::Outcome::kIgnored;
    default:
      return bulkhead::Outcome::kDone;
  }
}

}  // namespace

Call::Call(const CallEnv& env, const Request& request, CancelToken* cancel)
    : env_(env), request_(request), cancel_(cancel) {}

Step Call::done(CallResult result) {
  if (in_flight_ > 0) drop_others();  // before the trace is taken: their records are part of it
  result.attempts = attempts_;
  result.trace = decisions_.take(std::move(wire_.method), std::move(wire_.url));  // the call is over
  if (result.response) {
    result.response->attempts = attempts_;
    result.response->history = std::move(history_);
    result.response->trace = result.trace;
  }
  slot_.release(slot_outcome(result, attempts_));  // before the caller hears of the outcome
  Step s;
  s.kind = Step::Kind::kDone;
  s.result = std::move(result);
  return s;
}

Step Call::fail(Status status, Duration retry_after) {
  CallResult r;
  r.error = std::move(status);
  r.retry_after = retry_after;
  return done(std::move(r));
}

Step Call::give_up(Status why) {
  if (last_ && last_->ok()) return done(std::move(*last_));
  return fail(std::move(why));
}

Step Call::stop(retry::Decision decision, Status why) {
  env_.metrics.decision(decision);
  decisions_.not_sent(env_.clock.now(), why.code(), decision, false, std::nullopt, env_.budget.tokens());
  return give_up(std::move(why));
}

Step Call::start() {
  const settings::Settings& s = env_.settings;
  const Duration timeout = request_.timeout ? std::min(*request_.timeout, s.timeout) : s.timeout;
  if (timeout <= Duration::zero()) {
    return fail(Status(Code::kInvalidArgument, "timeout: a call's deadline must be in the future", {"timeout"}));
  }
  const Instant now = env_.clock.now();
  deadline_ = now + timeout;
  decisions_.start(now, deadline_);

  if (!env_.spelling.matches(request_.url)) {
    Result<transport::ClientUrl> url = transport::ClientUrl::parse(request_.url);
    if (!url.ok()) return fail(Status(Code::kInvalidArgument, "url: " + url.status().message(), {"url"}));
    if (const transport::Origin target = url->origin(); !(target == env_.origin)) {
      return fail(Status(Code::kCrossOrigin, "request to " + target.to_string() + " on a client for " +
                                                 env_.origin.to_string(), {"url"}));
    }
  }
  for (const auto& [name, value] : request_.headers.fields()) {
    if (Status st = settings::check_header(name, value); !st.ok()) {
      return fail(Status(Code::kInvalidArgument, st.message(), {name}));
    }
  }

  CallContext context = effective_context(request_);
  if (env_.inject_faults) {
    Result<std::optional<faults::Scenario>> scenario = faults::scenario_from_baggage(context.baggage);
    if (!scenario.ok()) return fail(scenario.status());
    scenario_ = std::move(scenario).value();
    if (scenario_ && !s.forward_scenario) context.baggage = faults::without_scenario(context.baggage);
  }
  trace_ = telemetry::CallTrace(env_.telemetry.span_sink(), context.traceparent, context.tracestate);
  if (trace_.active()) {
    context.traceparent.clear();  // each attempt sends its own
    context.tracestate = trace_.tracestate();
  }

  wire_.method = request_.method;
  wire_.url = request_.url;
  wire_.body = request_.body;
  wire_.body_source = request_.body_source;
  wire_.headers = headers_that_travel(s, request_, context);
  wire_.omitted_headers = request_.omitted_headers;
  // A streamed request body without a rewind is sent once, whatever the method (docs/retries.md §4).
  body_replayable_ = request_.body_source == nullptr || request_.body_source->replayable();
  may_send_twice_ = retry::may_send_twice(wire_.method, wire_.headers, body_replayable_, request_.retry);
  unprocessed_may_resend_ = request_.retry != retry::RetryOverride::kForbid && body_replayable_;
  // docs/retries.md §6.8: only a request that may be sent twice, with no streamed body (two copies cannot
  // read one stream at once), and only where the driver keeps several attempts in flight.
  hedging_ = hedging_allowed_ && env_.hedge_delay.has_value() && may_send_twice_ && request_.body_source == nullptr;
  Step acquire;
  acquire.kind = Step::Kind::kAcquire;
  acquire.until = deadline_;
  return acquire;
}

Step Call::on_slot(Result<bulkhead::Slot> slot) {
  if (!slot.ok()) return fail(slot.status());  // turned away: nothing was sent, no policy saw it
  slot_ = std::move(slot).value();
  return admit();
}

Step Call::admit() {
  if (!started_budget_) {
    started_budget_ = true;
    env_.budget.on_request();
  }
  if (cancelled()) return stop(retry::Decision::kStopped, cancelled_status());
  const Instant now = env_.clock.now();
  if (now >= deadline_) return stop(retry::Decision::kExpired, Status(Code::kTimeout, "the call's deadline passed"));
  if (deadline_ - now < env_.settings.min_attempt_time) {
    // docs/timeouts.md §8.4: too little is left for the dependency to do the work; sending would only load it.
    return stop(retry::Decision::kExpired,
                Status(Code::kTimeout, "less than min_attempt_time (" + format_duration(env_.settings.min_attempt_time) +
                                           ") was left of the call's deadline: no attempt started"));
  }

  if (wire_.body_source != nullptr) {
    // Before anything is admitted: a body that cannot be sent again ends the call here.
    if (Status st = wire_.body_source->begin_attempt(); !st.ok()) return stop(retry::Decision::kStopped, std::move(st));
  }
  const breaker::Admission admission = env_.breaker.admit();
  if (!admission.admitted) {
    // Rejected attempts send nothing, are not retried, are not classified (docs/breaker.md §9.1). A call that already
    // holds a response from an earlier attempt returns it (docs/retries.md §6.6: only a call that got none fails).
    env_.metrics.rejected();
    env_.metrics.decision(retry::Decision::kStopped);
    decisions_.not_sent(now, Code::kRejected, retry::Decision::kStopped, true, admission.at, env_.budget.tokens());
    if (trace_.active()) trace_.rejected(attempt_span(env_.clock.wall_now()));
    if (last_ && last_->ok()) return done(std::move(*last_));
    return fail(Status(Code::kRejected, "circuit open for " + env_.origin.to_string() + ": nothing was sent"),
                admission.retry_after);
  }
  permit_ = admission.permit;
  if (Status st = run_before(); !st.ok()) {
    // Nothing was sent: the permit goes back without a verdict, no budget is charged, no retry follows.
    end_attempt(breaker::Outcome::kIgnored, retry::Decision::kStopped);
    decisions_.not_sent(now, st.code(), retry::Decision::kStopped, false, admission.at, env_.budget.tokens());
    return fail(std::move(st));
  }
  return send(now, admission.at, env_.budget.tokens(), /*hedge=*/false);
}

Step Call::send(Instant now, breaker::Position admitted_at, double budget, bool hedge) {
  attempt_started_ = now;
  if (scenario_) wire_.fault = draw_fault();
  if (trace_.active()) {
    telemetry::Span span = attempt_span(env_.clock.wall_now());
    span.hedge = hedge;
    std::string traceparent = trace_.begin(std::move(span));
    if (!omits("traceparent")) wire_.headers.set("traceparent", std::move(traceparent));
  }
  ++attempt_;
  ++attempts_;
  decisions_.admitted(now, attempt_, admitted_at, budget, hedge);
  Step s;
  s.kind = Step::Kind::kSend;
  s.limits = {std::min(now + env_.settings.attempt_timeout, deadline_), deadline_};
  if (!env_.settings.deadline_header.empty() && !omits(env_.settings.deadline_header)) {
    // Set per attempt, after the hooks: what this attempt has left, as it is sent (docs/timeouts.md §8.4).
    wire_.headers.set(env_.settings.deadline_header,
                      deadline_header_value(s.limits.attempt_deadline - now, env_.settings.deadline_format));
  }
  if (hedging_) s.copy = stash();
  return s;
}

std::optional<Instant> Call::hedge_at() const {
  if (!hedging_ || in_flight_ == 0 || in_flight_ >= env_.settings.hedge->max ||
      attempt_ >= env_.settings.max_attempts) {
    return std::nullopt;
  }
  const settings::HedgeDelay& d = *env_.hedge_delay;
  const std::optional<Duration> delay = d.fixed ? d.fixed : env_.latency.percentile(d.percentile);
  if (!delay) return std::nullopt;  // too few latencies seen yet to know the percentile
  const Instant at = last_sent_ + *delay;
  if (at >= deadline_) return std::nullopt;
  return at;
}

Step Call::hedge() {
  Step pending;
  pending.kind = Step::Kind::kPending;
  // Every bound of admit(), and hedge.max and max_attempts, which hedges count against.
  if (!hedging_ || in_flight_ == 0 || in_flight_ >= env_.settings.hedge->max ||
      attempt_ >= env_.settings.max_attempts || cancelled()) {
    return pending;
  }
  const Instant now = env_.clock.now();
  if (now >= deadline_ || deadline_ - now < env_.settings.min_attempt_time) return pending;
  const breaker::Admission admission = env_.breaker.admit();
  if (!admission.admitted) return pending;  // nothing sent: the call waits for the copies out
  const double budget_before = env_.budget.tokens();
  if (!env_.budget.try_hedge()) {
    // At or below half: the permit goes back unused, without a verdict or a metric (nothing was sent).
    (void)env_.breaker.record(admission.permit, breaker::Outcome::kIgnored);
    return pending;
  }
  permit_ = admission.permit;
  if (Status st = run_before(); !st.ok()) {
    (void)env_.breaker.record(admission.permit, breaker::Outcome::kIgnored);
    return pending;  // a hedge a hook refused is not sent; the copies out decide the call
  }
  return send(now, admission.at, budget_before, /*hedge=*/true);
}

int Call::stash() {
  auto c = std::make_unique<Copy>();
  c->id = static_cast<int>(copies_.size()) + 1;
  c->wire = wire_;  // as sent: this attempt's hook headers, traceparent and deadline header
  if (unhooked_headers_) {
    wire_.headers = std::move(*unhooked_headers_);  // the next copy starts again from the call's own headers
    unhooked_headers_.reset();
  }
  c->permit = permit_;
  c->started = attempt_started_;
  if (trace_.active()) c->span = trace_.take_open();
  c->record = decisions_.take_open();
  last_sent_ = attempt_started_;
  ++in_flight_;
  copies_.push_back(std::move(c));
  return static_cast<int>(copies_.size());
}

void Call::unstash(Copy& c) {
  permit_ = c.permit;
  attempt_started_ = c.started;
  if (trace_.active()) trace_.put_open(std::move(c.span));
  decisions_.put_open(std::move(c.record));
}

Step Call::on_sent(int copy, transport::WireResult sent) {
  Step pending;
  pending.kind = Step::Kind::kPending;
  if (copy < 1 || copy > static_cast<int>(copies_.size()) || !copies_[copy - 1]->in_flight) return pending;
  Copy& c = *copies_[copy - 1];
  c.in_flight = false;
  --in_flight_;
  unstash(c);
  const Instant after = attempt_ended(sent);
  Step next = judge(std::move(sent), nullptr, after, false);
  next.cancel = std::move(cancel_now_);
  cancel_now_.clear();
  return next;
}

void Call::drop_others() {
  for (const std::unique_ptr<Copy>& c : copies_) {
    if (!c->in_flight) continue;
    c->in_flight = false;
    --in_flight_;
    unstash(*c);
    transport::WireResult cancelled;
    cancelled.wire_sends = 1;
    cancelled.error = Code::kCancelled;
    cancelled.message = "another copy of the request answered first";
    const Instant now = attempt_ended(cancelled);
    // How long it ran is a lower bound of its latency: kept, so the tracker still sees the slow tail.
    env_.latency.record(now - attempt_started_);
    decisions_.outcome(0, Code::kCancelled);
    decisions_.superseded();
    end_attempt(breaker::Outcome::kIgnored, retry::Decision::kStopped);  // not counted as a failure
    cancel_now_.push_back(c->id);
  }
}

Step Call::superseded(const classify::Classification& c) {
  // Counted as classified (the dependency did fail); the decision waits for the copies still out.
  counted_.reset();
  decisions_.superseded();
  if (Status st = count(c.breaker); !st.ok()) {
    decisions_.decided(env_.clock.now(), retry::Decision::kStopped, Duration::zero(), retry::WaitSource::kNone,
                       counted_, env_.budget.tokens());
    return fail(std::move(st));
  }
  if (c.breaker == breaker::Outcome::kSuccess) env_.budget.on_success();
  (void)env_.budget.on_retryable();  // §6.4: an attempt classified retry charges the budget, retry or not
  env_.metrics.decision(retry::Decision::kStopped);
  decisions_.decided(env_.clock.now(), retry::Decision::kStopped, Duration::zero(), retry::WaitSource::kNone,
                     counted_, env_.budget.tokens());
  Step s;
  s.kind = Step::Kind::kPending;
  return s;
}

AttemptResult Call::attempt_result() const {
  return AttemptResult{&env_.breaker, &env_.metrics, permit_, &env_.clock, attempt_started_,
                       env_.settings.breaker.slow_call_duration};
}

Status Call::count(breaker::Outcome outcome) {
  Status st = attempt_result().record(outcome, &counted_.emplace());
  if (!st.ok()) env_.metrics.decision(retry::Decision::kStopped);
  return st;
}

void Call::end_attempt(breaker::Outcome outcome, retry::Decision decision) {
  counted_.reset();
  const bool counted = count(outcome).ok();
  if (counted) env_.metrics.decision(decision);
  decisions_.decided(env_.clock.now(), counted ? decision : retry::Decision::kStopped, Duration::zero(),
                     retry::WaitSource::kNone, counted_, env_.budget.tokens());
}

Result<retry::DecisionResult> Call::end_attempt(std::optional<breaker::Outcome> outcome,
                                                const retry::DecisionInput& in) {
  counted_.reset();
  if (outcome) {
    if (Status st = count(*outcome); !st.ok()) {
      decisions_.decided(in.now, retry::Decision::kStopped, Duration::zero(), retry::WaitSource::kNone, counted_,
                         env_.budget.tokens());
      return st;
    }
  }
  if (in.classification.breaker == breaker::Outcome::kSuccess) env_.budget.on_success();
  const retry::DecisionResult decision = retry::decide(in, env_.backoff, env_.budget, env_.random);
  env_.metrics.decision(decision.decision);
  decisions_.decided(in.now, decision.decision, decision.wait, decision.source, counted_, env_.budget.tokens());
  return decision;
}

uint64_t Call::body_size() const {
  if (wire_.body) return wire_.body->size();
  if (wire_.body_source && wire_.body_source->length() > 0) return static_cast<uint64_t>(wire_.body_source->length());
  return 0;
}

Status Call::run_before() {
  const classify::AttemptHooks* hooks[] = {env_.settings.attempt_hooks.get(), request_.attempt_hooks.get()};
  if (hooks[0] == nullptr && hooks[1] == nullptr) return Status();
  Headers headers = wire_.headers;
  classify::AttemptRequest request{wire_.method, wire_.url, attempt_ + 1, headers};
  for (const classify::AttemptHooks* h : hooks) {
    if (h == nullptr) continue;
    if (Status st = h->before(request); !st.ok()) return st;
  }
  unhooked_headers_ = std::exchange(wire_.headers, std::move(headers));
  return Status();
}

void Call::run_after(const classify::Attempt& seen) const {
  if (env_.settings.attempt_hooks) env_.settings.attempt_hooks->after(seen);
  if (request_.attempt_hooks) request_.attempt_hooks->after(seen);
}

Instant Call::attempt_ended(const transport::WireResult& sent) {
  if (unhooked_headers_) {
    // A retry or a redirect starts again from the call's own headers.
    wire_.headers = std::move(*unhooked_headers_);
    unhooked_headers_.reset();
  }
  const Instant after = env_.clock.now();
  decisions_.ended(after - attempt_started_, sent.wire_sends);
  env_.metrics.attempt(after - attempt_started_, body_size(),
                       telemetry::AttemptAttributes::of(wire_.method, sent.response.status,
                                                        sent.response.http_version, sent.error));
  if (trace_.active()) {
    const bool answered = sent.error == Code::kOk;
    trace_.end(after - attempt_started_, answered ? sent.response.status : 0,
               answered ? sent.response.http_version : std::string(), sent.error);
  }
  return after;
}

Step Call::on_sent(transport::WireResult sent, std::unique_ptr<transport::ResponseBody> body) {
  const Instant after = attempt_ended(sent);
  return judge(std::move(sent), std::move(body), after, false);
}

Step Call::on_read_ahead(transport::BodyRead last) {
  Held held = std::move(*held_);
  held_.reset();
  if (last.error != Code::kOk) {
    // A body that breaks off makes the attempt a lost connection, classified as such.
    held.sent = transport::WireResult{};
    held.sent.error = last.error;
    held.sent.message = std::move(last.message);
    return judge(std::move(held.sent), nullptr, held.after, true);
  }
  if (last.n == 0) held.body.reset();  // read to its end: the connection is free again
  return on_classified(held.verdict, std::move(held.sent), std::move(held.body), held.after);
}

Step Call::judge(transport::WireResult sent, Body body, Instant after, bool read_ahead_done) {
  if (sent.error != Code::kOk) body.reset();
  classify::Attempt seen;
  seen.method = wire_.method;
  seen.number = attempt_;
  seen.now = env_.clock.wall_now();
  decisions_.outcome(sent.response.status, sent.error);
  if (sent.error == Code::kOk) {
    seen.status = sent.response.status;
    seen.headers = &sent.response.headers;
  } else {
    seen.error = sent.error;
    seen.error_message = sent.message;
  }
  // Once per attempt, with what it first brought: a body read ahead that breaks off comes back here
  // (read_ahead_done) as a lost connection for the classifier only.
  if (!read_ahead_done) run_after(seen);
  if (sent.error != Code::kOk) {
    if (std::optional<Step> ended = ended_by_client(sent, after)) return std::move(*ended);
  }
  Result<classify::Classification> verdict = env_.classifier.classify(seen);
  if (!verdict.ok()) {
    body.reset();
    end_attempt(breaker::Outcome::kFailure, retry::Decision::kStopped);
    return fail(verdict.status());
  }
  decisions_.classified(*verdict, seen.headers != nullptr && seen.headers->contains("retry-after"));
  // docs/retries.md §6.8: a failure worth a retry while another copy is out waits for that copy.
  if (in_flight_ > 0 && verdict->retry == classify::RetryVerdict::kAgain) return superseded(*verdict);
  if (body && !read_ahead_done && (verdict->retry == classify::RetryVerdict::kAgain || follows(sent))) {
    // This response may be replaced by a retry or a redirect: the driver reads its body now, up to 64 KiB
    // (docs/bodies.md §7), so a short one frees its connection; on_read_ahead() goes on. A body that breaks
    // off makes the attempt a lost connection, classified as such.
    held_ = Held{std::move(sent), std::move(body), *verdict, after};
    Step s;
    s.kind = Step::Kind::kReadAhead;
    return s;
  }
  return on_classified(*verdict, std::move(sent), std::move(body), after);
}

std::optional<Step> Call::ended_by_client(transport::WireResult& sent, Instant after) {
  // Decided by the client itself, never asked of the classifier (docs/retries.md §5.1).
  if (cancelled()) {
    end_attempt(breaker::Outcome::kIgnored, retry::Decision::kStopped);
    return give_up(cancelled_status());
  }
  if (after >= deadline_ || env_.clock.now() >= deadline_) {
    end_attempt(breaker::Outcome::kFailure, retry::Decision::kExpired);
    return give_up(Status(Code::kTimeout, "the call's deadline passed: " + sent.message));
  }
  if (sent.error == Code::kTooLarge || sent.error == Code::kResource) {
    // The client's own limits (max_response_body, max_response_headers) and local shortages say nothing
    // of the dependency (docs/transport.md §10.7): no breaker verdict, no retry, no budget charge.
    end_attempt(breaker::Outcome::kIgnored, retry::Decision::kStopped);
    return give_up(Status(sent.error, std::move(sent.message)));
  }
  return std::nullopt;
}

Step Call::on_classified(const classify::Classification& c, transport::WireResult sent, Body body, Instant after) {
  if (env_.hedge_delay && sent.error == Code::kOk && c.breaker == breaker::Outcome::kSuccess) {
    env_.latency.record(after - attempt_started_);  // the origin's latencies, for a percentile hedge delay
  }
  retry::DecisionInput in;
  in.classification = c;
  // A stream the server refused or dropped unprocessed (HTTP/2 REFUSED_STREAM, GOAWAY) never reached the
  // application: sending it again is safe for any method (docs/libcurl-traps.md §19).
  in.may_send_twice = may_send_twice_ || (sent.error == Code::kStreamRefused && unprocessed_may_resend_);
  // A body still on its connection here was read ahead past what may be buffered, or is not retryable
  // anyway: so a streamed response is never retried, and never dropped with its verdict unrecorded.
  in.body_too_large = body != nullptr || (sent.error == Code::kOk && sent.response.body.size() > kRetryBufferLimit);
  in.attempt = attempt_;
  in.max_attempts = env_.settings.max_attempts;
  in.now = after;
  in.deadline = deadline_;
  in.max_retry_after = env_.max_retry_after;

  CallResult outcome;
  if (sent.error == Code::kOk) {
    Response& resp = outcome.response.emplace();
    static_cast<transport::WireResponse&>(resp) = std::move(sent.response);
    resp.url = wire_.url;
  } else {
    outcome.error = Status(sent.error, std::move(sent.message));
  }
  std::optional<transport::WireRequest> next = redirect_of(outcome);
  if (next) body.reset();  // read ahead already: a body still on its connection here is longer, and closed
  // A streamed response that ends the call counts its result when its body ends (docs/bodies.md §7).
  const bool streamed = body != nullptr;
  Result<retry::DecisionResult> decision = end_attempt(streamed ? std::nullopt : std::optional(c.breaker), in);
  if (!decision.ok()) return fail(decision.status());

  if (decision->decision == retry::Decision::kAgain) {
    last_ = std::move(outcome);
    Step s;
    s.kind = Step::Kind::kWait;
    s.until = after + decision->wait;
    return s;
  }
  if (next) return follow(std::move(*next), *outcome.response);
  if (streamed) {
    PendingVerdict pending{attempt_result(), c.breaker};
    outcome.response->stream = std::make_shared<ResponseStream>(std::move(body), pending, cancel_, std::move(slot_));
  }
  return done(std::move(outcome));
}

bool Call::follows(const transport::WireResult& sent) const {
  if (sent.error != Code::kOk || sent.response.status < 300 || sent.response.status > 399) return false;
  CallResult outcome;
  Response& resp = outcome.response.emplace();
  static_cast<transport::WireResponse&>(resp) = sent.response;
  resp.url = wire_.url;
  return redirect_of(outcome).has_value();
}

std::optional<transport::WireRequest> Call::redirect_of(const CallResult& outcome) const {
  if (!outcome.ok() || !request_.follow_redirects || history_.size() >= kMaxRedirects) return std::nullopt;
  std::optional<transport::WireRequest> next = follow_redirect(wire_, *outcome.response, env_.origin);
  // A streamed request body without a rewind cannot go to the new location.
  if (next && next->body_source != nullptr && !body_replayable_) next.reset();
  return next;
}

bool Call::omits(std::string_view name) const {
  return std::any_of(request_.omitted_headers.begin(), request_.omitted_headers.end(),
                     [name](const std::string& o) { return equals_ignore_case(o, name); });
}

Step Call::follow(transport::WireRequest next, Response& got) {
  if (in_flight_ > 0) drop_others();  // the redirect decided the call's request: the other copies end
  history_.push_back(Redirect{got.status, wire_.url, std::move(got.reason), std::move(got.http_version),
                              std::move(got.headers)});
  decisions_.redirect(wire_.method, wire_.url);
  wire_ = std::move(next);
  may_send_twice_ = retry::may_send_twice(wire_.method, wire_.headers, wire_.body_source == nullptr || body_replayable_,
                                          request_.retry);
  attempt_ = 0;
  last_.reset();
  Step s;
  s.kind = Step::Kind::kRedirect;
  return s;
}

telemetry::Span Call::attempt_span(WallTime start) const {
  telemetry::Span span;
  span.name = wire_.method;
  span.start = start;
  span.url_full = telemetry::redacted_url(wire_.url);
  span.server_address = env_.origin.host;
  span.server_port = env_.origin.port;
  span.method = wire_.method;
  span.resend_count = attempts_;  // the attempts the call made before this one
  return span;
}

transport::InjectedFault Call::draw_fault() const {
  const faults::Fault* f = scenario_->fault_for(env_.fault_point);
  if (f == nullptr) return {};
  // A certain fault draws nothing, so adding one leaves the seeded draws of the other rules as they were.
  if (f->probability < 1 && !(env_.random.uniform01() < f->probability)) return {};
  transport::InjectedFault injected;
  injected.kind = f->kind;
  injected.delay = f->delay;
  injected.status = f->status;
  return injected;
}

Step Call::on_waited(bool cut_short) {
  if (cut_short) return stop(retry::Decision::kStopped, cancelled_status());
  return admit();
}

}  // namespace humus::client
