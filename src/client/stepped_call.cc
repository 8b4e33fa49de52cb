#include "client/stepped_call.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "client/read_ahead.h"

namespace humus::client {
namespace {

using std::chrono::milliseconds;

// The milliseconds from `now` to `until`, rounded up so that a wait of them has reached it.
int64_t ms_until(Instant until, Instant now) {
  return std::max<int64_t>(std::chrono::ceil<milliseconds>(until - now).count(), 0);
}

Status freed_status() { return Status(Code::kCancelled, "the stepped call was freed before it ended"); }

// The destructor completes at most this many steps: each ends the call or moves it one step nearer its end.
constexpr int kMaxStepsToEnd = 16;

}  // namespace

SteppedCall::SteppedCall(const CallEnv& env, transport::Transport& transport, const Request& request,
                         CancelToken* cancel)
    : bulkhead_(env.bulkhead),
      clock_(env.clock),
      transport_(transport),
      cancel_(cancel),
      call_(env, request, cancel),
      waiter_(&SteppedCall::granted, this) {}

SteppedCall::~SteppedCall() {
  if (started_ && step_.kind != Step::Kind::kDone) {
    call_.abandon();
    for (int i = 0; i < kMaxStepsToEnd && step_.kind != Step::Kind::kDone; ++i) step_ = give_up_step();
  }
  if (const int fd = wake_fd_.load(std::memory_order_relaxed); fd >= 0) ::close(fd);
}

void SteppedCall::granted(void* self) {
  auto* call = static_cast<SteppedCall*>(self);
  call->granted_.store(true, std::memory_order_release);
  const uint64_t one = 1;
  if (const int fd = call->wake_fd_.load(std::memory_order_acquire); fd >= 0) (void)!::write(fd, &one, sizeof one);
}

bool SteppedCall::advance(transport::StepWait& wait) {
  if (!started_) {
    started_ = true;
    step_ = call_.start();
  }
  for (;;) {
    wait = transport::StepWait{};
    switch (step_.kind) {
      case Step::Kind::kAcquire: {
        std::optional<Step> next = acquire(wait);
        if (!next) return false;
        step_ = std::move(*next);
        break;
      }
      case Step::Kind::kSend: {
        if (!attempt_) attempt_ = transport_.open_stepped(call_.wire(), step_.limits, cancel_);
        std::optional<transport::Transport::Opened> opened = attempt_->advance(wait);
        if (!opened) return false;
        attempt_.reset();
        step_ = call_.on_sent(std::move(opened->result), std::move(opened->body));
        break;
      }
      case Step::Kind::kWait: {
        const Instant now = clock_.now();
        if (!cancelled() && now < step_.until) {
          wait.ms = ms_until(step_.until, now);
          return false;
        }
        step_ = call_.on_waited(cancelled());
        break;
      }
      case Step::Kind::kReadAhead: {
        transport::BodyWait body_wait;
        std::optional<Step> next = read_ahead_ready(call_, body_wait);
        if (!next) {
          wait.fd = body_wait.fd;
          wait.read = true;
          wait.ms = body_wait.ms;
          return false;
        }
        step_ = std::move(*next);
        break;
      }
      case Step::Kind::kRedirect:
        step_ = call_.admit();
        break;
      case Step::Kind::kDone:
        return true;
      case Step::Kind::kPending:  // only a call that allow_hedging() let hedge waits on copies; not this one
        step_ = Step{};
        step_.result.error = Status(Code::kInternal, "a stepped call was asked to wait for hedged copies");
        return true;
    }
  }
}

std::optional<Step> SteppedCall::acquire(transport::StepWait& wait) {
  if (!queued_) {
    if (cancelled()) return call_.on_slot(Status(Code::kCancelled, "the call was cancelled"));
    if (std::optional<bulkhead::Slot> slot = bulkhead_.acquire_or_queue(waiter_)) return call_.on_slot(std::move(*slot));
    return queue(wait);
  }
  const int wake_fd = wake_fd_.load(std::memory_order_relaxed);
  uint64_t drained = 0;
  (void)!::read(wake_fd, &drained, sizeof drained);
  if (granted_.load(std::memory_order_acquire)) {
    queued_ = false;
    return call_.on_slot(bulkhead_.take(waiter_));
  }
  if (cancelled()) return leave_queue(Status(Code::kCancelled, "the call was cancelled"));
  const Instant now = clock_.now();
  if (now >= queue_end_) {
    queued_ = false;
    if (bulkhead_.abandon(waiter_)) return call_.on_slot(bulkhead_.refusal(deadline_first_, now - queued_at_));
    return call_.on_slot(bulkhead_.take(waiter_));  // handed over as the wait ran out: granted
  }
  wait.fd = wake_fd;
  wait.read = true;
  wait.ms = ms_until(queue_end_, now);
  return std::nullopt;
}

std::optional<Step> SteppedCall::queue(transport::StepWait& wait) {
  int wake_fd = wake_fd_.load(std::memory_order_relaxed);
  if (wake_fd < 0) {
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    wake_fd_.store(wake_fd, std::memory_order_release);
  }
  if (wake_fd < 0) {
    // No descriptor to be woken through: the slot is waited for here, as the blocking driver waits for it.
    if (!bulkhead_.abandon(waiter_)) return call_.on_slot(bulkhead_.take(waiter_));
    return call_.on_slot(bulkhead_.acquire(step_.until, cancel_));
  }
  queued_ = true;
  queued_at_ = clock_.now();
  const Instant wait_end = queued_at_ + bulkhead_.wait();
  deadline_first_ = step_.until < wait_end;
  queue_end_ = std::min(wait_end, step_.until);
  // granted() may have run already, before the descriptor existed: the next advance sees granted_ first.
  if (granted_.load(std::memory_order_acquire)) return acquire(wait);
  wait.fd = wake_fd;
  wait.read = true;
  wait.ms = ms_until(queue_end_, queued_at_);
  return std::nullopt;
}

Step SteppedCall::leave_queue(Status why) {
  queued_ = false;
  if (!bulkhead_.abandon(waiter_)) bulkhead_.take(waiter_).release(bulkhead::Outcome::kIgnored);  // pass it on
  return call_.on_slot(std::move(why));
}

Step SteppedCall::give_up_step() {
  switch (step_.kind) {
    case Step::Kind::kAcquire:
      if (queued_) return leave_queue(freed_status());
      return call_.on_slot(freed_status());
    case Step::Kind::kSend: {
      attempt_.reset();  // cuts the transfer: its connection is closed with its lane
      transport::WireResult cut;
      cut.error = Code::kCancelled;
      cut.message = freed_status().message();
      return call_.on_sent(std::move(cut));
    }
    case Step::Kind::kWait:
      return call_.on_waited(true);
    case Step::Kind::kReadAhead: {
      transport::BodyRead cut;
      cut.error = Code::kCancelled;
      cut.message = freed_status().message();
      return call_.on_read_ahead(std::move(cut));
    }
    case Step::Kind::kRedirect:
      return call_.admit();
    case Step::Kind::kDone:
    case Step::Kind::kPending:
      break;
  }
  return Step{};
}

}  // namespace humus::client
