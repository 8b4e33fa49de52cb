// How a client's attempts reach the wire. Two implementations: libcurl (curl_transport.h) and the mock
// transport of testing/ that answers from a callback on the virtual clock (SPEC §16.2). Both serve blocking
// attempts on the caller's thread and asynchronous ones on the runtime's event loop.
#pragma once

#include <functional>
#include <memory>

#include "common/cancel.h"
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

using AttemptDone = std::function<void(WireResult)>;

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends one attempt and waits for its whole response or its failure, within `limits`; `cancel` may be
  // nullptr. Blocks the calling thread. Thread-safe: concurrent attempts run on separate connections.
  virtual WireResult perform(const WireRequest& request, const AttemptLimits& limits, CancelToken* cancel) = 0;

  // Starts one attempt on `loop` (call on the loop thread). `done` runs on the loop thread exactly once,
  // posted as a task of its own, so the attempt object is idle by then and may be destroyed in it. The
  // request must stay alive until `done`. Concurrent attempts of one client share its connections (HTTP/2
  // multiplexes them on one).
  virtual std::unique_ptr<AsyncAttempt> start(EventLoop& loop, const WireRequest& request,
                                              const AttemptLimits& limits, AttemptDone done) = 0;
};

}  // namespace humus::transport
