#include "testing/mock_transport.h"

#include <algorithm>

namespace humus::testing {

MockTransport::Planned MockTransport::plan(const transport::WireRequest& request,
                                           const transport::AttemptLimits& limits) {
  Planned p;
  p.result.wire_sends = 1;
  const Instant start = clock_.now();
  p.at = start;
  Result<MockReply> handled = handler_(request);
  if (!handled.ok()) {
    p.result.error = Code::kCallback;
    p.result.message = "mock transport handler failed: " + handled.status().message();
    return p;
  }
  MockReply reply = std::move(handled).value();
  const Instant bound = std::min(limits.attempt_deadline, limits.call_deadline);
  const Instant answer_at = reply.hang ? Instant::max() : start + reply.delay;
  p.at = std::min(answer_at, bound);
  if (answer_at > bound) {
    p.result.error = Code::kTimeout;
    p.result.message = limits.attempt_deadline <= limits.call_deadline ? "attempt timed out before the response headers"
                                                                       : "the call's deadline passed";
  } else if (reply.error != Code::kOk) {
    p.result.error = reply.error;
    p.result.message = reply.error_message.empty() ? "mock transport error" : std::move(reply.error_message);
  } else {
    p.result.headers_received = true;
    p.result.response.status = reply.status;
    p.result.response.headers = std::move(reply.headers);
    p.result.response.body = std::move(reply.body);
    p.result.response.http_version = "1.1";
  }
  return p;
}

transport::WireResult MockTransport::perform(const transport::WireRequest& request,
                                             const transport::AttemptLimits& limits, CancelToken* cancel) {
  Planned p = plan(request, limits);
  if (p.at > clock_.now()) {
    Signal local;
    Signal& wake = cancel != nullptr ? cancel->signal() : local;
    if (clock_.sleep_until(p.at, wake) && cancel != nullptr && cancel->cancelled()) {
      transport::WireResult cancelled;
      cancelled.wire_sends = 1;
      cancelled.error = Code::kCancelled;
      cancelled.message = "the call was cancelled";
      return cancelled;
    }
  }
  return std::move(p.result);
}

namespace {

// A mock attempt in flight on the loop: its outcome waits on a loop timer.
class MockAttempt final : public transport::AsyncAttempt {
 public:
  MockAttempt(transport::EventLoop& loop, transport::AttemptDone done) : loop_(loop), done_(std::move(done)) {}
  ~MockAttempt() override { cancel(); }

  void arm(Instant at, transport::WireResult result) {
    timer_ = loop_.add_timer(at, [this, result = std::move(result)]() mutable { finish(std::move(result)); });
  }
  void cancel() override {
    if (!done_) return;
    transport::WireResult cancelled;
    cancelled.wire_sends = 1;
    cancelled.error = Code::kCancelled;
    cancelled.message = "the call was cancelled";
    finish(std::move(cancelled));
  }

 private:
  void finish(transport::WireResult result) {
    if (!done_) return;
    if (timer_ != 0) loop_.cancel_timer(timer_);
    timer_ = 0;
    loop_.post([done = std::move(done_), result = std::move(result)]() mutable { done(std::move(result)); });
    done_ = nullptr;
  }

  transport::EventLoop& loop_;
  transport::AttemptDone done_;
  transport::EventLoop::TimerId timer_ = 0;
};

}  // namespace

std::unique_ptr<transport::AsyncAttempt> MockTransport::start(transport::EventLoop& loop,
                                                              const transport::WireRequest& request,
                                                              const transport::AttemptLimits& limits,
                                                              transport::AttemptDone done) {
  auto attempt = std::make_unique<MockAttempt>(loop, std::move(done));
  Planned p = plan(request, limits);
  attempt->arm(p.at, std::move(p.result));
  return attempt;
}

}  // namespace humus::testing
