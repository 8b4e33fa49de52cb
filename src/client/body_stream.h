// A response whose body is still on its connection (docs/bodies.md §7): humus_client_open returns it once the headers
// are in, and reading it to the end or closing it is what counts the attempt's result in the breaker — as
// its classification said, or a failure when the body breaks off (ignored when the caller cancelled). Until
// then the attempt's probe slot (half-open) is held, for at most probe_timeout: the breaker frees a probe
// whose result never comes (breaker.h), so a body never closed cannot wedge the circuit.
#pragma once

#include <memory>
#include <string>

#include "breaker/breaker.h"
#include "bulkhead/bulkhead.h"
#include "common/cancel.h"
#include "common/status.h"
#include "telemetry/metrics.h"
#include "transport/body_sink.h"

namespace humus::client {

// What the breaker will be told when the body ends: the attempt's permit and how it was classified.
struct PendingVerdict {
  breaker::Breaker* breaker = nullptr;
  telemetry::ClientMetrics* metrics = nullptr;
  breaker::Permit permit;
  breaker::Outcome outcome = breaker::Outcome::kSuccess;
};

// Not thread-safe: one reader at a time. Must not outlive its client (it holds the client's connection,
// breaker and bulkhead slot).
class ResponseStream {
 public:
  ResponseStream(std::unique_ptr<transport::BodyStream> wire, PendingVerdict verdict, CancelToken* cancel,
                 bulkhead::Slot slot);
  ~ResponseStream() { close(); }
  ResponseStream(const ResponseStream&) = delete;
  ResponseStream& operator=(const ResponseStream&) = delete;

  // The next bytes of the body (at least one, at most `cap`), or 0 at its end, which counts the result.
  // A failure (kConnectionLost; kTimeout at the call's deadline; kCancelled) counts a breaker failure, or
  // nothing when the caller cancelled, and every later read fails the same way.
  Result<size_t> read(char* buf, size_t cap);
  // Reads the rest onto `body` while the whole stays within `limit` bytes. Past it: kTooLarge, the body is
  // closed with no breaker verdict (docs/transport.md §10.7: the client's own limit says nothing of the dependency).
  Status read_rest(std::string& body, uint64_t limit);
  // Closes the body before its end (its connection with it) and counts the result as it was classified.
  // Nothing once the body ended.
  void close();
  bool ended() const { return wire_ == nullptr; }

 private:
  void settle(breaker::Outcome outcome);  // the breaker verdict and its metric, once

  std::unique_ptr<transport::BodyStream> wire_;  // nullptr once ended or closed
  PendingVerdict verdict_;
  bool settled_ = false;
  CancelToken* const cancel_;
  bulkhead::Slot slot_;  // the call is in flight until its body ends
  Status failure_;
};

}  // namespace humus::client
