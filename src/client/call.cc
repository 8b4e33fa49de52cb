#include "client/call.h"

#include <algorithm>

#include "client/body_stream.h"
#include "client/client.h"
#include "client/redirect.h"
#include "retry/decision.h"
#include "telemetry/redact.h"

namespace humus::client {
namespace {

// docs/bodies.md §7: a response body up to this size is buffered before a retry; a larger one is not retried.
constexpr size_t kRetryBufferLimit = 64 * 1024;

breaker::Outcome outcome_of(classify::BreakerVerdict v) {
  switch (v) {
    case classify::BreakerVerdict::kSuccess: return breaker::Outcome::kSuccess;
    case classify::BreakerVerdict::kFailure: return breaker::Outcome::kFailure;
    case classify::BreakerVerdict::kIgnored: return breaker::Outcome::kIgnored;
  }
  return breaker::Outcome::kFailure;
}

telemetry::CallOutcome counted_as(classify::BreakerVerdict v) {
  switch (v) {
    case classify::BreakerVerdict::kSuccess: return telemetry::CallOutcome::kSuccess;
    case classify::BreakerVerdict::kFailure: return telemetry::CallOutcome::kFailure;
    case classify::BreakerVerdict::kIgnored: return telemetry::CallOutcome::kIgnored;
  }
  return telemetry::CallOutcome::kFailure;
}

bool is_trace_header(std::string_view name) {
  return equals_ignore_case(name, "traceparent") || equals_ignore_case(name, "tracestate") ||
         equals_ignore_case(name, "baggage");
}

// The call context, with the trace headers found among the call's own headers taken as its parts
// (docs/telemetry.md §12): the call's own headers win over the context given, and as context they are the parent of the
// attempt spans and the source of the fault scenario. The first of repeated ones counts.
CallContext effective_context(const Request& r) {
  CallContext c = r.context;
  bool taken[3] = {false, false, false};
  for (const auto& [name, value] : r.headers.fields()) {
    if (!is_trace_header(name)) continue;
    const int i = equals_ignore_case(name, "traceparent") ? 0 : equals_ignore_case(name, "tracestate") ? 1 : 2;
    if (taken[i]) continue;
    taken[i] = true;
    (i == 0 ? c.traceparent : i == 1 ? c.tracestate : c.baggage) = value;
  }
  return c;
}

// What travels (docs/telemetry.md §12), later wins: configured headers; the call context's X-Request-ID (none is
// invented), traceparent and tracestate, baggage (the attempt's own traceparent replaces the caller's, per
// attempt, when spans are made; the fault scenario is already stripped); its bearer token only with
// forward_authorization (never Basic, and the origin check keeps it on the origin); the call's own headers
// but its trace headers, which were taken into the context.
Headers headers_that_travel(const settings::Settings& s, const Request& r, const CallContext& c) {
  Headers out;
  for (const auto& [name, value] : s.headers.fields()) out.add(name, value);
  const std::pair<const char*, const std::string*> passed[] = {
      {"X-Request-ID", &c.request_id}, {"traceparent", &c.traceparent}, {"tracestate", &c.tracestate},
      {"baggage", &c.baggage}};
  for (const auto& [name, value] : passed) {
    if (!value->empty()) out.set(name, *value);
  }
  if (s.forward_authorization && c.authorization.size() > 7 &&
      equals_ignore_case(std::string_view(c.authorization).substr(0, 7), "Bearer ")) {
    out.set("Authorization", c.authorization);
  }
  for (const auto& [name, value] : r.headers.fields()) {
    if (!is_trace_header(name)) out.remove(name);
  }
  for (const auto& [name, value] : r.headers.fields()) {
    if (!is_trace_header(name)) out.add(name, value);
  }
  return out;
}

}  // namespace

Call::Call(Client& client, const Request& request, CancelToken* cancel)
    : client_(client), request_(request), cancel_(cancel) {}

Step Call::done(CallResult result) {
  result.attempts = attempts_;
  if (result.response) result.response->attempts = attempts_;
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

std::optional<Step> Call::start() {
  const settings::Settings& s = client_.settings_;
  const Duration timeout = request_.timeout ? std::min(*request_.timeout, s.timeout) : s.timeout;
  if (timeout <= Duration::zero()) {
    return fail(Status(Code::kInvalidArgument, "timeout: a call's deadline must be in the future", {"timeout"}));
  }
  deadline_ = client_.clock_.now() + timeout;

  if (!client_.spelled_as_origin(request_.url)) {
    Result<transport::Url> url = transport::parse_url(request_.url);
    if (!url.ok()) return fail(Status(Code::kInvalidArgument, "url: " + url.status().message(), {"url"}));
    if (url->has_userinfo) return fail(Status(Code::kInvalidArgument, "url: user-info is not allowed", {"url"}));
    if (const transport::Origin target = transport::origin_of(*url); !(target == client_.origin_)) {
      return fail(Status(Code::kCrossOrigin, "request to " + target.to_string() + " on a client for " +
                                                 client_.origin_.to_string(), {"url"}));
    }
  }
  for (const auto& [name, value] : request_.headers.fields()) {
    if (Status st = settings::check_header(name, value); !st.ok()) {
      return fail(Status(Code::kInvalidArgument, st.message(), {name}));
    }
  }

  CallContext context = effective_context(request_);
  if (client_.runtime_.options().faults) {
    Result<std::optional<faults::Scenario>> scenario = faults::scenario_from_baggage(context.baggage);
    if (!scenario.ok()) return fail(scenario.status());
    scenario_ = std::move(scenario).value();
    if (scenario_ && !s.forward_scenario) context.baggage = faults::without_scenario(context.baggage);
  }
  trace_ = telemetry::CallTrace(client_.runtime_.telemetry().span_sink(), context.traceparent, context.tracestate);
  if (trace_.active()) {
    context.traceparent.clear();  // each attempt sends its own
    context.tracestate = trace_.tracestate();
  }

  wire_.method = request_.method;
  wire_.url = request_.url;
  wire_.body = request_.body;
  wire_.body_source = request_.body_source;
  wire_.headers = headers_that_travel(s, request_, context);
  // A streamed request body without a rewind is sent once, whatever the method (docs/retries.md §4).
  body_replayable_ = request_.body_source == nullptr || request_.body_source->replayable();
  may_send_twice_ = retry::may_send_twice(wire_.method, wire_.headers, body_replayable_, request_.retry);
  unprocessed_may_resend_ = request_.retry != retry::RetryOverride::kForbid && body_replayable_;
  return std::nullopt;
}

Step Call::admit() {
  if (!started_budget_) {
    started_budget_ = true;
    client_.budget_->on_request();
  }
  telemetry::ClientMetrics& metrics = client_.metrics_;
  if (cancelled()) {
    metrics.decision(retry::Decision::kStopped);
    return give_up(Status(Code::kCancelled, "the call was cancelled"));
  }
  const Instant now = client_.clock_.now();
  if (now >= deadline_) {
    metrics.decision(retry::Decision::kExpired);
    return give_up(Status(Code::kTimeout, "the call's deadline passed"));
  }

  if (wire_.body_source != nullptr) {
    // Before anything is admitted: a body that cannot be sent again ends the call here.
    if (Status st = wire_.body_source->begin_attempt(); !st.ok()) {
      metrics.decision(retry::Decision::kStopped);
      return give_up(std::move(st));
    }
  }
  const breaker::Admission admission = client_.breaker_.admit();
  if (!admission.admitted) {
    // Rejected attempts send nothing, are not retried, are not classified (docs/breaker.md §9.1). A call that already
    // holds a response from an earlier attempt returns it (docs/retries.md §6.6: only a call that got none fails).
    metrics.outcome(telemetry::CallOutcome::kRejected);
    metrics.decision(retry::Decision::kStopped);
    if (trace_.active()) trace_.rejected(attempt_span(client_.clock_.wall_now()));
    if (last_ && last_->ok()) return done(std::move(*last_));
    return fail(Status(Code::kRejected, "circuit open for " + client_.origin_.to_string() + ": nothing was sent"),
                admission.retry_after);
  }
  permit_ = admission.permit;
  attempt_started_ = now;
  if (scenario_) wire_.fault = draw_fault();
  if (trace_.active()) wire_.headers.set("traceparent", trace_.begin(attempt_span(client_.clock_.wall_now())));
  ++attempt_;
  ++attempts_;
  Step s;
  s.kind = Step::Kind::kSend;
  s.limits = {std::min(now + client_.settings_.attempt_timeout, deadline_), deadline_};
  return s;
}

Status Call::count(const classify::Classification& c) {
  telemetry::ClientMetrics& metrics = client_.metrics_;
  if (Status st = client_.breaker_.record(permit_, outcome_of(c.breaker)); !st.ok()) {
    metrics.outcome(telemetry::CallOutcome::kFailure);  // a failing policy counts the result as a failure
    metrics.decision(retry::Decision::kStopped);
    return st;
  }
  metrics.outcome(counted_as(c.breaker));
  return Status();
}

uint64_t Call::body_size() const {
  if (wire_.body) return wire_.body->size();
  if (wire_.body_source && wire_.body_source->length() > 0) return static_cast<uint64_t>(wire_.body_source->length());
  return 0;
}

transport::BodyRead Call::read_ahead(std::unique_ptr<transport::BodyStream>& body, std::string& into) {
  constexpr size_t kAhead = kRetryBufferLimit + 1;  // one byte past the limit tells "too large" apart
  transport::BodyRead r;
  while (body != nullptr && into.size() < kAhead) {
    const size_t at = into.size();
    into.resize(kAhead);
    r = body->read(into.data() + at, kAhead - at);
    into.resize(at + r.n);
    if (r.error != Code::kOk) return r;
    if (r.n == 0) body.reset();  // read to its end: the connection is free again
  }
  return r;
}

Step Call::on_sent(transport::WireResult sent, std::unique_ptr<transport::BodyStream> body) {
  breaker::Breaker& breaker = client_.breaker_;
  const Instant after = client_.clock_.now();
  telemetry::ClientMetrics& metrics = client_.metrics_;
  metrics.attempt(after - attempt_started_, body_size());
  if (trace_.active()) {
    const bool answered = sent.error == Code::kOk;
    trace_.end(after - attempt_started_, answered ? sent.response.status : 0,
               answered ? sent.response.http_version : std::string(), sent.error);
  }

  for (bool read_ahead_done = false;;) {
    // Decided by the client itself, never asked of the classifier (docs/retries.md §5.1).
    if (sent.error != Code::kOk) {
      body.reset();
      if (cancelled()) {
        (void)breaker.record(permit_, breaker::Outcome::kIgnored);
        metrics.outcome(telemetry::CallOutcome::kIgnored);
        metrics.decision(retry::Decision::kStopped);
        return give_up(Status(Code::kCancelled, "the call was cancelled"));
      }
      if (after >= deadline_ || client_.clock_.now() >= deadline_) {
        (void)breaker.record(permit_, breaker::Outcome::kFailure);
        metrics.outcome(telemetry::CallOutcome::kFailure);
        metrics.decision(retry::Decision::kExpired);
        return give_up(Status(Code::kTimeout, "the call's deadline passed: " + sent.message));
      }
      if (sent.error == Code::kTooLarge || sent.error == Code::kResource) {
        // The client's own limits (max_response_body, max_response_headers) and local shortages say nothing
        // of the dependency (docs/transport.md §10.7): no breaker verdict, no retry, no budget charge.
        (void)breaker.record(permit_, breaker::Outcome::kIgnored);
        metrics.outcome(telemetry::CallOutcome::kIgnored);
        metrics.decision(retry::Decision::kStopped);
        return give_up(Status(sent.error, std::move(sent.message)));
      }
    }

    classify::Attempt seen;
    seen.method = wire_.method;
    seen.number = attempt_;
    seen.now = client_.clock_.wall_now();
    if (sent.error == Code::kOk) {
      seen.status = sent.response.status;
      seen.headers = &sent.response.headers;
    } else {
      seen.error = sent.error;
      seen.error_message = sent.message;
    }
    Result<classify::Classification> verdict = client_.classifier_->classify(seen);
    if (!verdict.ok()) {
      body.reset();
      (void)breaker.record(permit_, breaker::Outcome::kFailure);
      metrics.outcome(telemetry::CallOutcome::kFailure);
      metrics.decision(retry::Decision::kStopped);
      return fail(verdict.status());
    }
    const classify::Classification& c = *verdict;
    if (body != nullptr && c.retry == classify::RetryVerdict::kAgain && !read_ahead_done) {
      // This response may be replaced by a retry: its body is read now, up to 64 KiB (docs/bodies.md §7). A body that
      // breaks off makes the attempt a lost connection, classified as such.
      read_ahead_done = true;
      transport::BodyRead r = read_ahead(body, sent.response.body);
      if (r.error != Code::kOk) {
        sent = transport::WireResult{};
        sent.error = r.error;
        sent.message = std::move(r.message);
        continue;
      }
    }
    // A streamed response's result is counted when its body ends (docs/bodies.md §7): here only when it is replaced.
    const bool streamed = body != nullptr;
    if (!streamed) {
      if (Status st = count(c); !st.ok()) return fail(st);
    }
    if (c.breaker == classify::BreakerVerdict::kSuccess) client_.budget_->on_success();

    retry::DecisionInput in;
    in.classification = c;
    // A stream the server refused or dropped unprocessed (HTTP/2 REFUSED_STREAM, GOAWAY) never reached the
    // application: sending it again is safe for any method (docs/libcurl-traps.md §19).
    in.may_send_twice = may_send_twice_ || (sent.error == Code::kStreamRefused && unprocessed_may_resend_);
    in.body_too_large = sent.error == Code::kOk && (sent.response.body.size() > kRetryBufferLimit);
    in.attempt = attempt_;
    in.max_attempts = client_.settings_.max_attempts;
    in.now = after;
    in.deadline = deadline_;
    in.max_retry_after = client_.max_retry_after_;
    const retry::DecisionResult decision =
        retry::decide(in, client_.backoff_, *client_.budget_, client_.runtime_.random());
    metrics.decision(decision.decision);

    CallResult outcome;
    if (sent.error == Code::kOk) {
      Response& resp = outcome.response.emplace();
      resp.status = sent.response.status;
      resp.headers = std::move(sent.response.headers);
      resp.body = std::move(sent.response.body);
      resp.http_version = std::move(sent.response.http_version);
      resp.url = wire_.url;
    } else {
      outcome.error = Status(sent.error, std::move(sent.message));
    }

    if (decision.decision == retry::Decision::kAgain) {
      if (streamed) {
        body.reset();  // read to its end above (a longer one is not retried)
        if (Status st = count(c); !st.ok()) return fail(st);
      }
      last_ = std::move(outcome);
      Step s;
      s.kind = Step::Kind::kWait;
      s.until = after + decision.wait;
      return s;
    }
    if (outcome.ok() && redirects_ < kMaxRedirects) {
      std::optional<transport::WireRequest> next = follow_redirect(wire_, *outcome.response, client_.origin_);
      // A streamed request body without a rewind cannot go to the new location.
      if (next && next->body_source != nullptr && !body_replayable_) next.reset();
      if (next) {
        if (streamed) {
          std::string drained;
          (void)read_ahead(body, drained);  // a short body frees its connection; a longer one is closed
          body.reset();
          if (Status st = count(c); !st.ok()) return fail(st);
        }
        ++redirects_;
        wire_ = std::move(*next);
        may_send_twice_ = retry::may_send_twice(wire_.method, wire_.headers,
                                                wire_.body_source == nullptr || body_replayable_, request_.retry);
        attempt_ = 0;
        last_.reset();
        return admit();
      }
    }
    if (streamed) {
      PendingVerdict pending{&breaker, &metrics, permit_, outcome_of(c.breaker), counted_as(c.breaker)};
      outcome.response->stream = std::make_shared<ResponseStream>(std::move(body), pending, cancel_, std::move(slot_));
    }
    return done(std::move(outcome));
  }
}

telemetry::Span Call::attempt_span(WallTime start) const {
  telemetry::Span span;
  span.name = wire_.method;
  span.start = start;
  span.url_full = telemetry::redacted_url(wire_.url);
  span.server_address = client_.origin_.host;
  span.server_port = client_.origin_.port;
  span.method = wire_.method;
  span.resend_count = attempts_;  // the attempts the call made before this one
  return span;
}

transport::InjectedFault Call::draw_fault() const {
  const faults::Fault* f = scenario_->fault_for(client_.fault_point_);
  if (f == nullptr) return {};
  // A certain fault draws nothing, so adding one leaves the seeded draws of the other rules as they were.
  if (f->probability < 1 && !(client_.runtime_.random().uniform01() < f->probability)) return {};
  transport::InjectedFault injected;
  switch (f->kind) {
    case faults::Fault::Kind::kAbort: injected.kind = transport::InjectedFault::Kind::kAbort; break;
    case faults::Fault::Kind::kDelay: injected.kind = transport::InjectedFault::Kind::kDelay; break;
    case faults::Fault::Kind::kStatus: injected.kind = transport::InjectedFault::Kind::kStatus; break;
  }
  injected.delay = f->delay;
  injected.status = f->status;
  return injected;
}

Step Call::on_waited(bool cut_short) {
  if (cut_short) {
    client_.metrics_.decision(retry::Decision::kStopped);
    return give_up(Status(Code::kCancelled, "the call was cancelled"));
  }
  return admit();
}

}  // namespace humus::client
