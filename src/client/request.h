// One call as the caller describes it, and what it got back.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "classify/attempt_hooks.h"
#include "common/clock.h"
#include "common/headers.h"
#include "common/status.h"
#include "retry/repeat.h"
#include "transport/body_sink.h"
#include "transport/wire.h"

namespace humus::client {

// What the request being served carries, passed on to the dependency (docs/telemetry.md §12). Empty: not given.
struct CallContext {
  std::string traceparent;
  std::string tracestate;
  std::string baggage;
  std::string request_id;     // X-Request-ID: sent when given, never invented
  std::string authorization;  // forwarded only with forward_authorization, and only a Bearer token
};

struct Request {
  std::string method = "GET";
  std::string url;  // absolute, within the client's origin
  Headers headers;
  std::shared_ptr<const std::string> body;  // the client's own copy: replayable for every attempt
  // Or a body the caller streams (replayable only with a rewind); one call at a time reads it.
  std::shared_ptr<transport::BodySource> body_source;
  retry::RetryOverride retry = retry::RetryOverride::kDefault;
  // false: a redirect is returned as the 3xx it is, for the caller to follow or not (docs/origin.md §2).
  bool follow_redirects = true;
  std::optional<Duration> timeout;  // the caller's bound on the whole call; the earlier of it and `timeout`
  CallContext context;
  // This call's own hooks (humus_request_set_attempt_hooks), run after the settings' ones; null: none.
  std::shared_ptr<const classify::AttemptHooks> attempt_hooks;
  // Headers not to send unless `headers` has them (humus_request_remove_header): the ones the client adds
  // itself — configured, from the call context, per attempt — and the ones libcurl adds (Accept, User-Agent).
  std::vector<std::string> omitted_headers;
};

class ResponseStream;
struct DecisionTrace;

// A redirect the call followed: the 3xx status and the URL of the request that got it, and the rest of the
// 3xx's head (its reason phrase, HTTP version and headers, bounded as a final response's are).
struct Redirect {
  int status = 0;
  std::string url;
  std::string reason;
  std::string http_version;
  Headers headers;
};

// What the last attempt brought off the wire (transport::WireResponse: status, headers, body, HTTP version),
// plus what only the call knows. One-way: the transport never sees a Response. For a streamed body
// (Client::open) `body` holds the bytes read ahead of `stream`.
struct Response : transport::WireResponse {
  std::string url;           // of the last request (after redirects)
  int attempts = 0;          // attempts the call made, every redirect's included
  std::vector<Redirect> history;  // the redirects followed, oldest first
  // The rest of the body, still on its connection (Client::open only); nullptr when `body` is all of it.
  // Shared so a Response stays a copyable value; copies read one stream.
  std::shared_ptr<ResponseStream> stream;
  std::shared_ptr<const DecisionTrace> trace;  // one record per attempt (docs/trace.md)
};

// How a call ends: a response the dependency sent, or an error when it got none (docs/retries.md §6.6).
struct CallResult {
  std::optional<Response> response;
  Status error;                  // set when response is empty
  int attempts = 0;
  Duration retry_after{};        // for kRejected: how much longer the breaker stays open
  std::shared_ptr<const DecisionTrace> trace;  // one record per attempt (docs/trace.md); also in response
  bool ok() const { return response.has_value(); }
};

}  // namespace humus::client
