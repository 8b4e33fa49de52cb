// How a client's attempts reach the wire. Two implementations: libcurl (curl_transport.h) and the mock
// transport of testing/ that answers from a callback on the virtual clock (docs/testing-kit.md §16.2). Both serve blocking
// attempts on the caller's thread and asynchronous ones on the runtime's event loop.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "common/cancel.h"
#include "transport/body_sink.h"
#include "transport/event_loop.h"
#include "transport/wire.h"

namespace humus::transport {

// An attempt in flight on the event loop.
class AsyncAttempt {
 public:
  virtual ~AsyncAttempt() = default;
  // Loop thread only: ends the attempt now with kCancelled (its `done` is still called, once).
  virtual void cancel() = 0;
};

// What a stepped attempt (Transport::open_stepped) or call waits for before it is advanced again: `fd` polling
// readable (`read`) or writable (`write`) — either, when both are asked — or `ms` milliseconds passing,
// whichever comes first. fd -1: the time alone; ms -1: no bound but the descriptor.
struct StepWait {
  int fd = -1;
  bool read = false;
  bool write = false;
  int64_t ms = -1;
};

using AttemptDone = std::function<void(WireResult)>;
using OpenDone = std::function<void(WireResult, std::unique_ptr<ResponseBody>)>;

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends one attempt and waits for its whole response or its failure, within `limits`; `cancel` may be
  // nullptr. Blocks the calling thread. Thread-safe: concurrent attempts run on separate connections.
  virtual WireResult perform(const WireRequest& request, const AttemptLimits& limits, CancelToken* cancel) = 0;

  // An attempt whose body is read after its headers: `result` as perform() reports it (its response holds
  // the bytes already read, all of them when `body` is nullptr), `body` the rest, on the attempt's
  // connection until it is read to the end or destroyed.
  struct Opened {
    WireResult result;
    std::unique_ptr<ResponseBody> body;  // read on the caller's thread
  };
  // Sends one attempt and returns once its response headers are in (or it failed), within `limits`; the
  // body's reads go on within limits.call_deadline and are cancelled by `cancel`, which must outlive the
  // body. A body must not outlive the transport. Blocks the calling thread; thread-safe. By default the
  // whole body is read first (the mock transport has nothing to stream).
  virtual Opened open(const WireRequest& request, const AttemptLimits& limits, CancelToken* cancel) {
    return Opened{perform(request, limits, cancel), nullptr};
  }

  // An attempt driven by its caller, a step at a time, on the caller's thread (docs/bindings.md: stepped calls).
  class Stepped {
   public:
    virtual ~Stepped() = default;
    // Runs the attempt as far as it goes without waiting: what open() returns once the headers are in or the
    // attempt failed; until then nothing, with `wait` set. Destroying it before then cuts the attempt.
    virtual std::optional<Opened> advance(StepWait& wait) = 0;
  };
  // As open(), stepped. By default the first advance() runs open() whole (the mock transport answers at once).
  virtual std::unique_ptr<Stepped> open_stepped(const WireRequest& request, const AttemptLimits& limits,
                                                CancelToken* cancel);

  // Starts one attempt on `loop` (call on the loop thread). `done` runs on the loop thread exactly once,
  // posted as a task of its own, so the attempt object is idle by then and may be destroyed in it. The
  // request must stay alive until `done`. Concurrent attempts of one client share its connections (HTTP/2
  // multiplexes them on one).
  virtual std::unique_ptr<AsyncAttempt> start(EventLoop& loop, const WireRequest& request,
                                              const AttemptLimits& limits, AttemptDone done) = 0;

  // As start(), but `done` comes once the response headers are in, with the body still on its connection
  // (`body`, nullptr when `result` failed or holds the whole body; read on the loop). The body's reads go on
  // within limits.call_deadline. A body must not outlive the transport. By default the whole body is read
  // first (the mock transport has nothing to stream).
  virtual std::unique_ptr<AsyncAttempt> start_open(EventLoop& loop, const WireRequest& request,
                                                   const AttemptLimits& limits, OpenDone done) {
    return start(loop, request, limits, [done = std::move(done)](WireResult r) { done(std::move(r), nullptr); });
  }
};

}  // namespace humus::transport
