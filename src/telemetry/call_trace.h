// The spans of one call (docs/telemetry.md §13.1): a CLIENT span per attempt, each a child of the caller's span (its
// traceparent) or, without one, of a trace begun for the call; the traceparent each attempt sends names
// that attempt's span, so the dependency sees exactly what the sink reports. Without a span sink nothing is
// made and the caller's traceparent passes through unchanged. Not thread-safe: owned by one call.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "telemetry/span.h"

namespace humus::telemetry {

// error.type of an attempt that got no answer: the status's name in lowercase, e.g. "timeout",
// "connection_lost", "rejected".
std::string error_type_of(Code code);
// error.type of an attempt, for its span and its metric series alike: error_type_of(error) without an
// answer, the status code ("503") for an answer of 400 or more, empty otherwise.
std::string attempt_error_type(Code error, int status_code);

class CallTrace {
 public:
  CallTrace() = default;
  // `sink` null: inactive. `traceparent`/`tracestate`: the call context's (an invalid traceparent starts a
  // new trace and drops the tracestate, as W3C Trace Context says).
  CallTrace(std::shared_ptr<const SpanSink> sink, std::string_view traceparent, std::string_view tracestate);

  bool active() const { return sink_ != nullptr; }

  // An attempt starts (`span` carries its attributes so far): returns the traceparent it sends.
  std::string begin(Span span);
  // The attempt that begin() started ended after `took`: its status (0: none), protocol and error.
  void end(Duration took, int status_code, std::string protocol_version, Code error);
  // An attempt the breaker turned away: a span that ends as it starts, error.type "rejected".
  void rejected(Span span);

  // Hedged copies (docs/retries.md §6.8) are in flight together: the call sets aside the span begin() started
  // and puts it back before end() ends it.
  Span take_open() { return std::move(open_); }
  void put_open(Span span) { open_ = std::move(span); }

  // What the attempts send along with their traceparent ("" for none).
  const std::string& tracestate() const { return tracestate_; }

 private:
  void stamp(Span& span) const;

  std::shared_ptr<const SpanSink> sink_;
  TraceId trace_id_{};
  std::optional<SpanId> parent_;
  uint8_t flags_ = 1;  // sampled: a sink is set, so the spans are recorded
  std::string tracestate_;
  Span open_;  // the attempt begun and not yet ended
};

}  // namespace humus::telemetry
