// A response whose body is still on its connection (docs/bodies.md §7): humus_client_open returns it once the headers
// are in, and reading it to the end or closing it is what counts the attempt's result in the breaker — as
// its classification said, or a failure when the body breaks off (ignored when the caller cancelled). Until
// then the attempt's probe slot (half-open) is held, for at most probe_timeout: the breaker frees a probe
// whose result never comes (breaker.h), so a body never closed cannot wedge the circuit.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "breaker/breaker.h"
#include "bulkhead/bulkhead.h"
#include "client/attempt_result.h"
#include "common/cancel.h"
#include "common/status.h"
#include "telemetry/metrics.h"
#include "transport/body_sink.h"
#include "transport/event_loop.h"
#include "transport/transport.h"

namespace humus::client {

// What the breaker will be told when the body ends: where the attempt's result goes, and how it was classified.
struct PendingVerdict {
  AttemptResult result;
  breaker::Outcome outcome = breaker::Outcome::kSuccess;
};

// One body of either driver (transport::ResponseBody). A blocking stream (humus_client_open) is read on the
// caller's thread: not thread-safe, one reader at a time. An asynchronous one (humus_client_submit_open) lives
// on the runtime's event loop: every member is called on the loop thread only, destruction included. Must not
// outlive its client (it holds the client's connection, breaker and bulkhead slot).
class ResponseStream : public std::enable_shared_from_this<ResponseStream> {
 public:
  // `cancel`: the call's token, which a blocking stream's reads heed (null: none); an asynchronous stream
  // takes the caller's in attach() instead.
  ResponseStream(std::unique_ptr<transport::ResponseBody> body, PendingVerdict verdict, CancelToken* cancel,
                 bulkhead::Slot slot);
  ~ResponseStream();
  ResponseStream(const ResponseStream&) = delete;
  ResponseStream& operator=(const ResponseStream&) = delete;

  // The next bytes of the body (at least one, at most `cap`), or 0 at its end, which counts the result.
  // A failure (kConnectionLost; kTimeout at the call's deadline; kCancelled) counts a breaker failure, or
  // nothing when the caller cancelled, and every later read fails the same way. Blocking streams only.
  Result<size_t> read(char* buf, size_t cap);
  // As read(), without waiting for the network (transport::ResponseBody::read_ready): 0 with `wait->fd` >= 0
  // is "nothing yet", not the end. Blocking streams only.
  Result<size_t> read_ready(char* buf, size_t cap, transport::BodyWait* wait);
  // Reads the rest onto `body` while the whole stays within `limit` bytes. Past it: kTooLarge, the body is
  // closed with no breaker verdict (docs/transport.md §10.7: the client's own limit says nothing of the dependency).
  // Blocking streams only.
  Status read_rest(std::string& body, uint64_t limit);

  // Asynchronous streams: lends `buf` (`cap` > 0) until `done` runs on the loop thread, exactly once and
  // never inside this call, with what read() would have returned. One read at a time (the caller sees to it).
  using ReadDone = std::function<void(Result<size_t>)>;
  void read_async(char* buf, size_t cap, ReadDone done);
  // Asynchronous streams, once, before the first read: the loop its reads complete on, and the caller's
  // `token` (may be null), which cancels it from any thread: a pending read ends with kCancelled, which the
  // breaker ignores.
  void attach(transport::EventLoop& loop, std::shared_ptr<CancelToken> token);

  // Closes the body before its end (its connection with it) and counts the result as it was classified.
  // Nothing once the body ended. A pending asynchronous read completes first, with kCancelled.
  void close();
  bool ended() const { return body_ == nullptr; }

 private:
  void settle(breaker::Outcome outcome);  // the attempt's result, recorded once
  // What a read of the wire brought, counted: its bytes, the end (0, the result counted), or the failure.
  Result<size_t> took(transport::BodyRead r);
  void drop_body();  // the body's end or failure: connection and bulkhead slot go

  std::unique_ptr<transport::ResponseBody> body_;  // nullptr once ended or closed
  PendingVerdict verdict_;
  bool settled_ = false;
  CancelToken* cancel_;                   // the caller's token, or null (asynchronous: set by attach())
  transport::EventLoop* loop_ = nullptr;  // asynchronous: set by attach()
  std::shared_ptr<CancelToken> watched_;  // asynchronous: the same token, held
  uint64_t watch_id_ = 0;
  ReadDone pending_;  // asynchronous: the read in flight
  bulkhead::Slot slot_;  // the call is in flight until its body ends
  Status failure_;
};

}  // namespace humus::client
