// The span sink of include/humus_http.h (docs/telemetry.md §13.1): each attempt's span handed to a C callback.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "capi/client_capi.h"
#include "capi/guard.h"
#include "capi/sink_table.h"
#include "telemetry/span.h"

using humus::capi::bad_handle;
using humus::capi::guard;
using humus::capi::live;
using humus::capi::report;

namespace {

using SpanSinkTable = humus::capi::SinkTable<humus_span_sink>;

int64_t unix_ns(humus::WallTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

humus_span_attribute text(const char* key, const std::string& value) {
  return {key, HUMUS_ATTRIBUTE_STRING, value.c_str(), 0};
}

humus_span_attribute number(const char* key, int64_t value) { return {key, HUMUS_ATTRIBUTE_INT, nullptr, value}; }

void deliver(const SpanSinkTable& sink, const humus::telemetry::Span& s) {
  namespace t = humus::telemetry;
  char trace_id[33], span_id[17], parent[17] = "";
  t::write_hex(s.trace_id.data(), s.trace_id.size(), trace_id);
  t::write_hex(s.span_id.data(), s.span_id.size(), span_id);
  if (s.parent_span_id) t::write_hex(s.parent_span_id->data(), s.parent_span_id->size(), parent);
  humus_span_attribute attributes[9];
  size_t n = 0;
  attributes[n++] = text("url.full", s.url_full);
  attributes[n++] = text("server.address", s.server_address);
  attributes[n++] = number("server.port", s.server_port);
  attributes[n++] = text("http.request.method", s.method);
  if (s.status_code != 0) attributes[n++] = number("http.response.status_code", s.status_code);
  if (!s.protocol_version.empty()) attributes[n++] = text("network.protocol.version", s.protocol_version);
  if (s.resend_count > 0) attributes[n++] = number("http.request.resend_count", s.resend_count);
  if (!s.error_type.empty()) attributes[n++] = text("error.type", s.error_type);
  if (s.hedge) attributes[n++] = number("humus.hedge", 1);

  humus_span c{};
  c.version = HUMUS_SPAN_VERSION;
  c.name = s.name.c_str();
  c.trace_id = trace_id;
  c.span_id = span_id;
  c.parent_span_id = parent;
  c.tracestate = s.tracestate.c_str();
  c.trace_flags = s.trace_flags;
  c.start_unix_ns = unix_ns(s.start);
  c.end_unix_ns = unix_ns(s.end);
  c.status = s.error ? HUMUS_SPAN_STATUS_ERROR : HUMUS_SPAN_STATUS_UNSET;
  c.attribute_count = n;
  c.attributes = attributes;
  sink.table.span(sink.table.user_data, &c);
}

}  // namespace

extern "C" {

HUMUS_API humus_status humus_runtime_set_span_sink(humus_runtime* rt, const humus_span_sink* sink,
                                                   humus_error** err) {
  return guard(err, [&]() -> humus_status {
    if (live(rt) == nullptr) return bad_handle("humus_runtime_set_span_sink", "rt", err);
    if (sink == nullptr) {
      rt->runtime.telemetry().set_span_sink(nullptr);
      return HUMUS_OK;
    }
    auto owned = humus::capi::adopt_sink(*sink, &humus_span_sink::span, "span sink", "span");
    if (!owned.ok()) return report(owned.status(), err);
    rt->runtime.telemetry().set_span_sink(
        [owned = *owned](const humus::telemetry::Span& s) { deliver(*owned, s); });
    return HUMUS_OK;
  });
}

}  // extern "C"
