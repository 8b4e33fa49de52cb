// The span of one attempt (docs/telemetry.md §13.1): kind CLIENT, named after the method, a child of the call context's
// span, with OpenTelemetry's HTTP client attributes. One per attempt sent (retries and redirects each have
// one) and one per attempt the breaker rejected, which ends as it starts with error.type "rejected".
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
#include "telemetry/trace_context.h"

namespace humus::telemetry {

struct Span {
  std::string name;  // the method
  TraceId trace_id{};
  SpanId span_id{};
  std::optional<SpanId> parent_span_id;  // the caller's span; empty: this attempt's span is a root
  std::string tracestate;                // the caller's, passed on unchanged
  uint8_t trace_flags = 0;
  WallTime start{};
  WallTime end{};
  bool error = false;  // status Error: a 4xx/5xx answer or none at all

  // Attributes (OpenTelemetry semantic conventions for HTTP clients).
  std::string url_full;                  // url.full (user-info is refused, so none to remove)
  std::string server_address;            // server.address
  int server_port = 0;                   // server.port
  std::string method;                    // http.request.method
  int status_code = 0;                   // http.response.status_code; 0: no response
  std::string protocol_version;          // network.protocol.version ("1.1", "2"); empty: no response
  int resend_count = 0;                  // http.request.resend_count: attempts of the call before this one
  bool hedge = false;                    // humus.hedge: a hedged copy sent while another was out (retries.md §6.8)
  std::string error_type;                // error.type: "503", "timeout", "rejected"…; empty: none
};

// Receives every finished span, on the thread that finished it. Must be thread-safe and quick.
using SpanSink = std::function<void(const Span&)>;

// Hands `span` to `sink` on the calling thread; a sink that throws loses that span, nothing else.
void deliver(const SpanSink& sink, const Span& span);

}  // namespace humus::telemetry
