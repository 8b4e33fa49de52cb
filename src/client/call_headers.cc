#include "client/call_headers.h"

#include <algorithm>
#include <chrono>

namespace humus::client {
namespace {

bool is_trace_header(std::string_view name) {
  return equals_ignore_case(name, "traceparent") || equals_ignore_case(name, "tracestate") ||
         equals_ignore_case(name, "baggage");
}

}  // namespace

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
  for (const std::string& name : r.omitted_headers) out.remove(name);
  for (const auto& [name, value] : r.headers.fields()) {
    if (!is_trace_header(name)) out.add(name, value);
  }
  return out;
}

std::string deadline_header_value(Duration left, settings::DeadlineFormat format) {
  const int64_t ms = std::max<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(left).count(), 0);
  return std::to_string(ms) + (format == settings::DeadlineFormat::kGrpc ? "m" : "");
}

}  // namespace humus::client
