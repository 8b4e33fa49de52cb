#include "testing/mock_transport.h"

#include <algorithm>
#include <cstring>

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
    p.body_error = reply.body_error;
    p.body_error_after = std::min(reply.body_error_after, p.result.response.body.size());
    p.body_error_message = reply.body_error_message.empty() ? "mock transport: the body broke off"
                                                            : std::move(reply.body_error_message);
  }
  return p;
}

namespace {

// A buffered attempt whose body breaks off fails as a whole.
transport::WireResult buffered(transport::WireResult result, MockTransport::Planned& p) {
  if (p.body_error == Code::kOk) return result;
  transport::WireResult lost;
  lost.wire_sends = 1;
  lost.error = p.body_error;
  lost.message = std::move(p.body_error_message);
  return lost;
}

}  // namespace

transport::WireResult MockTransport::wait(Planned& p, CancelToken* cancel) {
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

transport::WireResult MockTransport::perform(const transport::WireRequest& request,
                                             const transport::AttemptLimits& limits, CancelToken* cancel) {
  Planned p = plan(request, limits);
  transport::WireResult result = wait(p, cancel);
  return result.error == Code::kOk ? buffered(std::move(result), p) : result;
}

namespace {

// A response body served from memory, in the reader's pieces, breaking off where its reply said.
class MockBody final : public transport::ResponseBody {
 public:
  MockBody(std::string body, size_t end, Code error, std::string message, CancelToken* cancel)
      : body_(std::move(body)), end_(end), error_(error), message_(std::move(message)), cancel_(cancel) {}

  // Served from memory: always ready, so a read completes at once and never names a socket to wait on.
  void read(char* buf, size_t cap, ReadDone done) override {
    transport::BodyRead r;
    if (cancel_ != nullptr && cancel_->cancelled()) {
      r.error = Code::kCancelled;
      r.message = "the call was cancelled";
    } else if (at_ < end_) {
      r.n = std::min(cap, end_ - at_);
      std::memcpy(buf, body_.data() + at_, r.n);
      at_ += r.n;
    } else if (error_ != Code::kOk) {
      r.error = error_;
      r.message = message_;
    }
    done(std::move(r));
  }

 private:
  const std::string body_;
  const size_t end_;  // where the body ends or breaks off
  const Code error_;
  const std::string message_;
  CancelToken* const cancel_;
  size_t at_ = 0;
};

}  // namespace

transport::Transport::Opened MockTransport::open(const transport::WireRequest& request,
                                                 const transport::AttemptLimits& limits, CancelToken* cancel) {
  Planned p = plan(request, limits);
  Opened opened{wait(p, cancel), nullptr};
  // An empty body is complete with the headers: nothing to stream, so the result counts at once.
  if (opened.result.error != Code::kOk || !opened.result.headers_received ||
      (opened.result.response.body.empty() && p.body_error == Code::kOk)) {
    return opened;
  }
  std::string body = std::move(opened.result.response.body);
  opened.result.response.body.clear();
  const size_t end = p.body_error != Code::kOk ? p.body_error_after : body.size();
  opened.body = std::make_unique<MockBody>(std::move(body), end, p.body_error, std::move(p.body_error_message), cancel);
  return opened;
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
  attempt->arm(p.at, p.result.error == Code::kOk ? buffered(std::move(p.result), p) : std::move(p.result));
  return attempt;
}

}  // namespace humus::testing
