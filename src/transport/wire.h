// What crosses the transport boundary: one attempt's request as it goes on the wire, and what came back.
// The transport knows nothing of retries, breakers or budgets; it sends once and reports.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/headers.h"
#include "common/status.h"
#include "transport/body_sink.h"
#include "transport/http_version.h"

namespace humus::transport {

// What failure injection (docs/failure-injection.md §14) chose for one attempt, acted on by the fault transport
// (faults/fault_transport.h) in place of, or before, the real send.
// One type for what a fault does, from the scenario's rule (faults/scenario.h) to the transport that acts on it.
enum class FaultKind { kNone, kAbort, kDelay, kStatus };

struct InjectedFault {
  using Kind = FaultKind;
  Kind kind = Kind::kNone;
  Duration delay{};  // kDelay: waited before the send, within the attempt's timeout
  int status = 0;    // kStatus: the synthetic answer's status
};

struct WireRequest {
  std::string method;
  std::string url;  // absolute, within the client's origin
  Headers headers;
  std::shared_ptr<const std::string> body;  // nullptr: no body; shared so every attempt replays one copy
  // A body the caller streams instead (set_body_reader); `body` is then nullptr. Shared with the request.
  std::shared_ptr<BodySource> body_source;
  InjectedFault fault;  // kNone unless the runtime injects faults and this attempt drew one
  // Names of headers not to send unless `headers` has them: those libcurl or the transport would add on their own
  // (Accept, User-Agent, Accept-Encoding). Usually empty.
  std::vector<std::string> omitted_headers;
};

struct AttemptLimits {
  Instant attempt_deadline;  // until the response headers (docs/timeouts.md §8)
  Instant call_deadline;     // until the body's last byte
};

struct WireResponse {
  int status = 0;
  Headers headers;
  std::string body;
  std::string http_version;  // "1.1" or "2"
  std::string reason;        // the status line's reason phrase, bounded (transport/response_head.h); "" for HTTP/2
};

struct WireResult {
  Code error = Code::kOk;  // kOk: `response` holds what the dependency sent
  std::string message;     // what failed, for the caller and the classifier
  WireResponse response;
  int wire_sends = 0;      // times the request reached the wire (libcurl may resend a safe one)
  bool headers_received = false;
};

// How every attempt of one client reaches its dependency.
struct TransportConfig {
  std::string host;  // the origin's host, for hostname verification
  bool https = false;
  Duration connect_timeout = std::chrono::seconds(2);
  uint32_t max_idle_connections = 100;
  Duration idle_timeout = std::chrono::seconds(90);
  // A connection older than this takes no new request and is closed once idle (settings
  // max_connection_lifetime): re-resolves and re-verifies, and spreads HTTP/2 load across backends.
  Duration max_connection_lifetime = std::chrono::minutes(10);
  // The response header block's limit, in bytes of status line and fields, and in fields (settings
  // max_response_headers): past either the attempt ends with kTooLarge.
  uint32_t max_response_headers = 64 * 1024;
  uint32_t max_response_fields = 200;
  // A buffered body's limit in decoded bytes (settings max_response_body): past it, kTooLarge.
  uint64_t max_response_body = uint64_t{64} << 20;
  // Ask for compressed bodies and decode them (settings decompress); off when a call sets Accept-Encoding.
  bool decompress = true;
  HttpVersion http_version = HttpVersion::kAuto;
  // TLS: PEM text or file for each; empty means none. Verification is always on. Only an https client has
  // any: settings::validate refuses tls with an http base_url (docs/settings.md §3.2), the rule's one check.
  std::string ca_file, ca_pem, cert_file, cert_pem, key_file, key_pem;
  // Neither CA given: the system's bundle when libcurl's own is missing (transport/system_roots.h), or "".
  std::string system_ca_file;
  bool tls13_only = false;  // min version 1.3 instead of 1.2
  // "host:port:address:port" entries (curl --connect-to form) from the runtime's name overrides
  // (docs/transport.md §10.6): the URL, SNI and certificate check keep the name, the socket goes to the address.
  std::vector<std::string> connect_to;
};

}  // namespace humus::transport
