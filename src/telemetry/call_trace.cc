#include "telemetry/call_trace.h"

#include <cctype>
#include <string_view>

namespace humus::telemetry {

void deliver(const SpanSink& sink, const Span& span) {
  try {
    sink(span);
  } catch (...) {
    // Dropped: telemetry never fails a call.
  }
}

std::string error_type_of(Code code) {
  std::string name = code_name(code);
  constexpr std::string_view kPrefix = "HUMUS_E_";
  if (std::string_view(name).starts_with(kPrefix)) name.erase(0, kPrefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string attempt_error_type(Code error, int status_code) {
  if (error != Code::kOk) return error_type_of(error);
  if (status_code >= 400) return std::to_string(status_code);
  return std::string();
}

CallTrace::CallTrace(std::shared_ptr<const SpanSink> sink, std::string_view traceparent, std::string_view tracestate)
    : sink_(std::move(sink)) {
  if (!sink_) return;
  if (std::optional<TraceParent> caller = parse_traceparent(traceparent)) {
    trace_id_ = caller->trace_id;
    parent_ = caller->span_id;
    flags_ = caller->flags;
    tracestate_ = std::string(tracestate);
  } else {
    trace_id_ = new_trace_id(system_random());
  }
}

void CallTrace::stamp(Span& span) const {
  span.trace_id = trace_id_;
  span.parent_span_id = parent_;
  span.trace_flags = flags_;
  span.tracestate = tracestate_;
  span.span_id = new_span_id(system_random());
}

std::string CallTrace::begin(Span span) {
  open_ = std::move(span);
  stamp(open_);
  return format_traceparent(trace_id_, open_.span_id, flags_);
}

void CallTrace::end(Duration took, int status_code, std::string protocol_version, Code error) {
  open_.end = open_.start + std::chrono::duration_cast<WallTime::duration>(took);
  open_.status_code = status_code;
  open_.protocol_version = std::move(protocol_version);
  open_.error_type = attempt_error_type(error, status_code);
  open_.error = !open_.error_type.empty();
  deliver(*sink_, open_);
}

void CallTrace::rejected(Span span) {
  stamp(span);
  span.end = span.start;
  span.error = true;
  span.error_type = error_type_of(Code::kRejected);
  deliver(*sink_, span);
}

}  // namespace humus::telemetry
