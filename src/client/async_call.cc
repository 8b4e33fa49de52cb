#include "client/async_call.h"

#include <algorithm>

#include "client/body_stream.h"
#include "client/read_ahead.h"

namespace humus::client {

AsyncCall::AsyncCall(const CallEnv& env, transport::Transport& transport, transport::EventLoop& loop, Request request,
                     CallDone done, std::function<void(AsyncCall*)> forget, bool stream)
    : bulkhead_(env.bulkhead),
      transport_(transport),
      stream_(stream),
      request_(std::move(request)),
      call_(env, request_, &token_),
      done_(std::move(done)),
      forget_(std::move(forget)),
      loop_(loop),
      waiter_(&AsyncCall::granted, this) {
  if (!stream_) call_.allow_hedging();  // a streamed response's body stays on its one connection
}

void AsyncCall::cancel() {
  // Acquire pairs with finish()'s release: once the outcome was delivered, the loop may be gone.
  if (ended_.load(std::memory_order_acquire)) return;
  token_.cancel();
  loop_.post([self = shared_from_this()] { self->on_cancel(); });
}

void AsyncCall::link(std::shared_ptr<CancelToken> token) {
  linked_ = std::move(token);
  // Weak: the token may outlive the call, and a call already over is not kept for it.
  linked_id_ = linked_->subscribe([weak = weak_from_this()] {
    if (std::shared_ptr<AsyncCall> self = weak.lock()) self->cancel();
  });
}

void AsyncCall::granted(void* self) {
  auto* call = static_cast<AsyncCall*>(self);
  call->loop_.post([keep = call->shared_from_this()] {
    if (keep->phase_ != Phase::kQueued) return;  // already ended (cancelled or timed out as it was granted)
    if (keep->timer_ != 0) keep->loop_.cancel_timer(keep->timer_);
    keep->timer_ = 0;
    keep->advance(keep->call_.on_slot(keep->bulkhead_.take(keep->waiter_)));
  });
}

void AsyncCall::begin() { advance(call_.start()); }

void AsyncCall::queue(Instant deadline) {
  phase_ = Phase::kQueued;
  const Instant now = loop_.clock().now();
  const Instant wait_end = now + bulkhead_.wait();
  const bool deadline_first = deadline < wait_end;
  timer_ = loop_.add_timer(std::min(wait_end, deadline), [self = shared_from_this(), deadline_first, now] {
    self->timer_ = 0;
    if (self->bulkhead_.abandon(self->waiter_)) {
      self->advance(self->call_.on_slot(self->bulkhead_.refusal(deadline_first, self->loop_.clock().now() - now)));
    }
    // Otherwise a slot was handed over as the wait ran out: granted() is on its way and takes it.
  });
}

void AsyncCall::advance(Step step) {
  switch (step.kind) {
    case Step::Kind::kAcquire:
      if (token_.cancelled()) {
        advance(call_.on_slot(Status(Code::kCancelled, "the call was cancelled")));
      } else if (std::optional<bulkhead::Slot> slot = bulkhead_.acquire_or_queue(waiter_)) {
        advance(call_.on_slot(std::move(*slot)));
      } else {
        queue(step.until);
      }
      return;
    case Step::Kind::kSend:
      phase_ = Phase::kSending;
      if (step.copy != 0) {
        send_copy(step);
        return;
      }
      if (stream_) {
        attempt_ = transport_.start_open(
            loop_, call_.wire(), step.limits,
            [self = shared_from_this()](transport::WireResult sent, std::unique_ptr<transport::ResponseBody> body) {
              self->attempt_.reset();
              self->advance(self->call_.on_sent(std::move(sent), std::move(body)));
            });
        return;
      }
      attempt_ = transport_.start(loop_, call_.wire(), step.limits, [self = shared_from_this()](transport::WireResult sent) {
        self->attempt_.reset();
        self->advance(self->call_.on_sent(std::move(sent)));
      });
      return;
    case Step::Kind::kPending:
      return;  // the copies in flight, or the hedge timer, move the call on
    case Step::Kind::kReadAhead:
      phase_ = Phase::kReadingAhead;
      read_ahead(call_, [self = shared_from_this()](Step next) { self->advance(std::move(next)); });
      return;
    case Step::Kind::kWait:
      if (token_.cancelled()) {  // cancelled while the attempt's outcome was already on its way
        advance(call_.on_waited(true));
        return;
      }
      phase_ = Phase::kWaiting;
      timer_ = loop_.add_timer(step.until, [self = shared_from_this()] {
        self->timer_ = 0;
        self->advance(self->call_.on_waited(false));
      });
      return;
    case Step::Kind::kRedirect:
      advance(call_.admit());
      return;
    case Step::Kind::kDone:
      finish(std::move(step.result));
      return;
  }
}

void AsyncCall::on_cancel() {
  switch (phase_) {
    case Phase::kNew:
    case Phase::kDone:
      return;  // begin() sees the token; a finished call ignores it
    case Phase::kQueued:
      if (timer_ != 0) loop_.cancel_timer(timer_);
      timer_ = 0;
      if (!bulkhead_.abandon(waiter_)) {
        bulkhead_.take(waiter_).release(bulkhead::Outcome::kIgnored);  // handed over as it was cancelled: pass it on
      }
      advance(call_.on_slot(Status(Code::kCancelled, "cancelled while waiting for a bulkhead slot")));
      return;
    case Phase::kSending:
      if (hedge_timer_ != 0) loop_.cancel_timer(hedge_timer_);
      hedge_timer_ = 0;
      if (attempt_ != nullptr) attempt_->cancel();  // its done (kCancelled) comes as a task of its own
      for (auto& [id, attempt] : copies_) attempt->cancel();  // each copy's done comes as well
      return;
    case Phase::kReadingAhead:
      call_.held_body().cancel();  // the pending read completes with kCancelled
      return;
    case Phase::kWaiting:
      loop_.cancel_timer(timer_);
      timer_ = 0;
      advance(call_.on_waited(true));
      return;
  }
}

void AsyncCall::send_copy(const Step& step) {
  const int id = step.copy;
  copies_.emplace_back(id, transport_.start(loop_, call_.wire(id), step.limits,
                                            [self = shared_from_this(), id](transport::WireResult sent) {
                                              self->on_copy_done(id, std::move(sent));
                                            }));
  arm_hedge();
}

void AsyncCall::arm_hedge() {
  if (hedge_timer_ != 0) loop_.cancel_timer(hedge_timer_);
  hedge_timer_ = 0;
  const std::optional<Instant> at = call_.hedge_at();
  if (!at) return;
  hedge_timer_ = loop_.add_timer(*at, [self = shared_from_this()] {
    self->hedge_timer_ = 0;
    if (self->phase_ != Phase::kSending) return;
    self->advance(self->call_.hedge());  // kSend sends the copy and arms again; kPending: no hedge now
  });
}

void AsyncCall::cancel_copies(const std::vector<int>& ids) {
  for (const int id : ids) {
    for (auto& [copy, attempt] : copies_) {
      if (copy == id) attempt->cancel();  // its done comes later and changes nothing
    }
  }
}

void AsyncCall::on_copy_done(int copy, transport::WireResult sent) {
  // Idle now (done is posted as a task of its own): it may go.
  std::erase_if(copies_, [copy](const auto& c) { return c.first == copy; });
  if (phase_ != Phase::kSending) return;  // a copy cancelled after the call moved on, or ended
  Step next = call_.on_sent(copy, std::move(sent));
  cancel_copies(next.cancel);
  if (next.kind == Step::Kind::kPending) {
    arm_hedge();  // a copy that failed frees a place under hedge.max
    return;
  }
  if (hedge_timer_ != 0) loop_.cancel_timer(hedge_timer_);
  hedge_timer_ = 0;
  advance(std::move(next));
}

void AsyncCall::finish(CallResult result) {
  phase_ = Phase::kDone;
  if (hedge_timer_ != 0) loop_.cancel_timer(hedge_timer_);
  hedge_timer_ = 0;
  ended_.store(true, std::memory_order_release);
  if (linked_id_ != 0) linked_->unsubscribe(linked_id_);
  if (result.ok() && result.response->stream != nullptr) result.response->stream->attach(loop_, linked_);
  CallDone done = std::move(done_);
  done(std::move(result));  // the call's state machine gave its bulkhead slot back first
  forget_(this);
}

}  // namespace humus::client
