// The mock transport (docs/testing-kit.md §16.2): attempts answered by a handler instead of a socket, timed on the runtime's
// clock, so users test how their code handles a failing dependency fast and deterministically. A reply may
// be a response, a transport error, a delay before the headers, or a hang; delays and hangs are bounded by
// the attempt's deadline exactly as a real dependency's would be.
#pragma once

#include <functional>
#include <string>

#include "common/clock.h"
#include "transport/transport.h"

namespace humus::testing {

struct MockReply {
  int status = 200;
  Headers headers;
  std::string body;
  Code error = Code::kOk;     // not kOk: the attempt fails with this transport error (status is ignored)
  std::string error_message;
  Duration delay{};           // before the response headers (or the error)
  bool hang = false;          // never answers: the attempt times out
  // not kOk: the body breaks off with this error after `body_error_after` bytes (a reset mid-body). A
  // streamed read (Transport::open) gets those bytes and then the error; a buffered attempt fails with it.
  Code body_error = Code::kOk;
  size_t body_error_after = 0;
  std::string body_error_message;
};

// Called once per attempt, on the thread that drives it; must be thread-safe when calls run concurrently.
// A handler that fails (a binding's exception) returns a Status; the attempt then fails with kCallback.
using MockHandler = std::function<Result<MockReply>(const transport::WireRequest&)>;

class MockTransport final : public transport::Transport {
 public:
  MockTransport(MockHandler handler, Clock& clock) : handler_(std::move(handler)), clock_(clock) {}

  transport::WireResult perform(const transport::WireRequest& request, const transport::AttemptLimits& limits,
                                CancelToken* cancel) override;
  std::unique_ptr<transport::AsyncAttempt> start(transport::EventLoop& loop, const transport::WireRequest& request,
                                                 const transport::AttemptLimits& limits,
                                                 transport::AttemptDone done) override;
  // The body is served from memory in the reader's pieces, so a streamed response holds its breaker verdict
  // (and probe slot) until it is read to the end or closed, as a real one does (docs/bodies.md §7). An empty
  // body (with no body error) is complete with the headers: its result counts at once.
  Opened open(const transport::WireRequest& request, const transport::AttemptLimits& limits,
              CancelToken* cancel) override;

  // The reply and when it is due, or the outcome at once (a failed handler).
  struct Planned {
    transport::WireResult result;
    Instant at;
    Code body_error = Code::kOk;  // of a response: how its body breaks off
    size_t body_error_after = 0;
    std::string body_error_message;
  };
  Planned plan(const transport::WireRequest& request, const transport::AttemptLimits& limits);

 private:
  // Waits until the reply is due (a cancel ends the wait with kCancelled).
  transport::WireResult wait(Planned& p, CancelToken* cancel);

  MockHandler handler_;
  Clock& clock_;
};

}  // namespace humus::testing
