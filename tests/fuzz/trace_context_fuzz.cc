// W3C Trace Context (docs/telemetry.md §13.1). Input: a traceparent, '\n', a tracestate. parse_traceparent never crashes
// and what it reads formats back to itself; a call's trace continues a valid caller (same trace id, the
// caller's tracestate kept) and starts afresh otherwise (tracestate dropped); every traceparent it sends is
// valid.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "telemetry/call_trace.h"
#include "telemetry/trace_context.h"

namespace tc = humus::telemetry;

// S25: the libFuzzer target `trace_context`; its corpus replays as the ctest fuzz.trace_context.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [traceparent, tracestate] =
      humus::fuzz::split_once(std::string_view(reinterpret_cast<const char*>(data), size), '\n');

  const std::optional<tc::TraceParent> parent = tc::parse_traceparent(traceparent);
  if (parent) {
    const std::string formatted = tc::format_traceparent(parent->trace_id, parent->span_id, parent->flags);
    const std::optional<tc::TraceParent> again = tc::parse_traceparent(formatted);
    FUZZ_CHECK(again.has_value(), formatted.c_str());
    FUZZ_CHECK(again->trace_id == parent->trace_id && again->span_id == parent->span_id &&
                   again->flags == parent->flags,
               formatted.c_str());
    FUZZ_CHECK(traceparent.substr(3, 52) == formatted.substr(3, 52), "the ids and flags are the caller's");
  }

  auto sink = std::make_shared<const tc::SpanSink>([](const tc::Span&) {});
  tc::CallTrace trace(sink, traceparent, tracestate);
  const std::string sent = trace.begin(tc::Span{});
  const std::optional<tc::TraceParent> child = tc::parse_traceparent(sent);
  FUZZ_CHECK(child.has_value(), sent.c_str());
  if (parent) {
    FUZZ_CHECK(child->trace_id == parent->trace_id, "the caller's trace continues");
    FUZZ_CHECK(trace.tracestate() == tracestate, "the caller's tracestate passes on unchanged");
  } else {
    FUZZ_CHECK(trace.tracestate().empty(), "no tracestate without a valid traceparent");
  }
  trace.end(humus::Duration::zero(), 200, "1.1", humus::Code::kOk);
  return 0;
}
