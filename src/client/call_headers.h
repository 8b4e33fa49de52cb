// What a call sends besides its own request (docs/telemetry.md §12): the trace context and the headers that
// travel with every attempt.
#pragma once

#include <string>

#include "client/request.h"
#include "common/headers.h"
#include "settings/settings.h"

namespace humus::client {

// The call context, with the trace headers found among the call's own headers taken as its parts: the call's
// own headers win over the context given, and as context they are the parent of the attempt spans and the
// source of the fault scenario. The first of repeated ones counts.
CallContext effective_context(const Request& request);

// What travels, later wins: configured headers; the context's X-Request-ID (none is invented), traceparent,
// tracestate and baggage (the fault scenario already stripped; with spans, each attempt sends its own
// traceparent); its bearer token only with forward_authorization (never Basic, and the origin check
// keeps it on the origin); the call's own headers but its trace headers, which were taken into the context.
// None of these goes under a name the request omits (Request::omitted_headers), but the request's own.
Headers headers_that_travel(const settings::Settings& settings, const Request& request, const CallContext& context);

// deadline_header's value for an attempt with `left` to go (docs/timeouts.md §8.4): whole milliseconds, rounded
// down so the server never believes it has more time than the client gives it; "grpc" adds gRPC's unit "m".
std::string deadline_header_value(Duration left, settings::DeadlineFormat format);

}  // namespace humus::client
