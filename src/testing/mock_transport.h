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

 private:
  // The reply and when it is due, or the outcome at once (a failed handler).
  struct Planned {
    transport::WireResult result;
    Instant at;
  };
  Planned plan(const transport::WireRequest& request, const transport::AttemptLimits& limits);

  MockHandler handler_;
  Clock& clock_;
};

}  // namespace humus::testing
