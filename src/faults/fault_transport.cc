#include "faults/fault_transport.h"

#include <algorithm>
#include <string>

namespace humus::faults {
namespace {

using transport::AttemptDone;
using transport::AttemptLimits;
using transport::InjectedFault;
using transport::WireRequest;
using transport::WireResult;

WireResult failed(Code code, std::string message) {
  WireResult r;
  r.error = code;
  r.message = std::move(message);
  return r;
}

// The outcome of an abort or status fault: decided without the network.
WireResult immediate(const InjectedFault& f) {
  if (f.kind == InjectedFault::Kind::kAbort) {
    return failed(Code::kConnectionLost, "connection aborted by an injected fault (humus.fault)");
  }
  WireResult r;
  r.response.status = f.status;
  r.response.http_version = "1.1";
  r.response.headers.add("Content-Length", "0");
  r.headers_received = true;
  return r;
}

WireResult delay_timed_out() {
  return failed(Code::kTimeout, "attempt timed out during an injected delay (humus.fault)");
}

// An asynchronous attempt: while the fault decides, a posted outcome or a delay timer; then, after a delay,
// the real attempt. Loop thread only. Shared with the loop's tasks, which may outlive the attempt object.
struct AsyncFault : std::enable_shared_from_this<AsyncFault> {
  AsyncFault(transport::Transport& real_transport, transport::EventLoop& on, const WireRequest& sent,
             const AttemptLimits& within, AttemptDone then)
      : inner(real_transport), loop(on), request(sent), limits(within), done(std::move(then)) {}

  // Posts `result` as the attempt's outcome (a task of its own, as the Transport contract says), once.
  void finish(WireResult result) {
    if (finished) return;
    finished = true;
    loop.post([self = shared_from_this(), result = std::move(result)]() mutable {
      AttemptDone d = std::move(self->done);
      d(std::move(result));
    });
  }

  void begin() {
    const InjectedFault& f = request.fault;
    if (f.kind != InjectedFault::Kind::kDelay) {
      finish(immediate(f));
      return;
    }
    const Instant until = std::min(loop.clock().now() + f.delay, limits.attempt_deadline);
    const bool times_out = until == limits.attempt_deadline;
    timer = loop.add_timer(until, [self = shared_from_this(), times_out] {
      self->timer = 0;
      if (self->finished) return;
      if (times_out) {
        self->finish(delay_timed_out());
        return;
      }
      // Weak: the real attempt is owned by this object, so a strong capture would be a cycle.
      std::weak_ptr<AsyncFault> weak = self;
      self->real = self->inner.start(self->loop, self->request, self->limits, [weak](WireResult r) {
        if (std::shared_ptr<AsyncFault> alive = weak.lock()) {
          alive->finished = true;
          AttemptDone d = std::move(alive->done);
          d(std::move(r));
        }
      });
    });
  }

  void cancel() {
    if (real) {
      real->cancel();  // its done follows as a task of its own
      return;
    }
    if (timer != 0) loop.cancel_timer(timer);
    timer = 0;
    finish(failed(Code::kCancelled, "the call was cancelled"));
  }

  transport::Transport& inner;
  transport::EventLoop& loop;
  const WireRequest& request;
  const AttemptLimits limits;
  AttemptDone done;
  bool finished = false;
  transport::EventLoop::TimerId timer = 0;
  std::unique_ptr<transport::AsyncAttempt> real;
};

class AsyncFaultAttempt final : public transport::AsyncAttempt {
 public:
  explicit AsyncFaultAttempt(std::shared_ptr<AsyncFault> fault) : fault_(std::move(fault)) {}
  void cancel() override { fault_->cancel(); }

 private:
  std::shared_ptr<AsyncFault> fault_;
};

}  // namespace

FaultTransport::FaultTransport(std::unique_ptr<transport::Transport> inner, Clock& clock)
    : inner_(std::move(inner)), clock_(clock) {}

WireResult FaultTransport::perform(const WireRequest& request, const AttemptLimits& limits, CancelToken* cancel) {
  const InjectedFault& f = request.fault;
  switch (f.kind) {
    case InjectedFault::Kind::kNone:
      break;
    case InjectedFault::Kind::kAbort:
    case InjectedFault::Kind::kStatus:
      return immediate(f);
    case InjectedFault::Kind::kDelay: {
      Signal local;
      Signal& wake = cancel != nullptr ? cancel->signal() : local;
      const Instant until = std::min(clock_.now() + f.delay, limits.attempt_deadline);
      while (clock_.now() < until) {
        clock_.sleep_until(until, wake);
        if (cancel != nullptr && cancel->cancelled()) return failed(Code::kCancelled, "the call was cancelled");
      }
      if (until == limits.attempt_deadline) return delay_timed_out();
      break;
    }
  }
  return inner_->perform(request, limits, cancel);
}

transport::Transport::Opened FaultTransport::open(const WireRequest& request, const AttemptLimits& limits,
                                                  CancelToken* cancel) {
  if (request.fault.kind == InjectedFault::Kind::kNone) return inner_->open(request, limits, cancel);
  return Opened{perform(request, limits, cancel), nullptr};
}

std::unique_ptr<transport::Transport::Stepped> FaultTransport::open_stepped(const WireRequest& request,
                                                                           const AttemptLimits& limits,
                                                                           CancelToken* cancel) {
  if (request.fault.kind == InjectedFault::Kind::kNone) return inner_->open_stepped(request, limits, cancel);
  return Transport::open_stepped(request, limits, cancel);
}

std::unique_ptr<transport::AsyncAttempt> FaultTransport::start(transport::EventLoop& loop, const WireRequest& request,
                                                               const AttemptLimits& limits, AttemptDone done) {
  if (request.fault.kind == InjectedFault::Kind::kNone) return inner_->start(loop, request, limits, std::move(done));
  auto fault = std::make_shared<AsyncFault>(*inner_, loop, request, limits, std::move(done));
  fault->begin();
  return std::make_unique<AsyncFaultAttempt>(std::move(fault));
}

}  // namespace humus::faults
