#include "client/async_call.h"

#include <algorithm>

#include "client/client.h"

namespace humus::client {

AsyncCall::AsyncCall(Client& client, Request request, CallDone done)
    : client_(client),
      request_(std::move(request)),
      call_(client, request_, &token_),
      done_(std::move(done)),
      loop_(client.runtime_.loop()),
      waiter_(&AsyncCall::granted, this) {}

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
    keep->call_.hold(keep->client_.bulkhead_.take(keep->waiter_));
    keep->on_slot();
  });
}

void AsyncCall::begin() {
  if (std::optional<Step> refused = call_.start()) {
    finish(std::move(refused->result));
    return;
  }
  if (token_.cancelled()) {
    finish(CallResult{std::nullopt, Status(Code::kCancelled, "the call was cancelled")});
    return;
  }
  bulkhead::Bulkhead& bulkhead = client_.bulkhead_;
  if (std::optional<bulkhead::Slot> slot = bulkhead.acquire_or_queue(waiter_)) {
    call_.hold(std::move(*slot));
    on_slot();
    return;
  }
  phase_ = Phase::kQueued;
  const Instant now = loop_.clock().now();
  const Instant wait_end = now + bulkhead.wait();
  const bool deadline_first = call_.deadline() < wait_end;
  timer_ = loop_.add_timer(std::min(wait_end, call_.deadline()), [self = shared_from_this(), deadline_first, now] {
    self->timer_ = 0;
    bulkhead::Bulkhead& b = self->client_.bulkhead_;
    if (b.abandon(self->waiter_)) {
      self->finish(CallResult{std::nullopt, b.refusal(deadline_first, self->loop_.clock().now() - now)});
    }
    // Otherwise a slot was handed over as the wait ran out: granted() is on its way and takes it.
  });
}

void AsyncCall::on_slot() { advance(call_.admit()); }

void AsyncCall::advance(Step step) {
  switch (step.kind) {
    case Step::Kind::kSend:
      phase_ = Phase::kSending;
      attempt_ = client_.transport_->start(loop_, call_.wire(), step.limits,
                                           [self = shared_from_this()](transport::WireResult sent) {
                                             self->attempt_.reset();
                                             self->advance(self->call_.on_sent(std::move(sent)));
                                           });
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
      if (!client_.bulkhead_.abandon(waiter_)) {
        client_.bulkhead_.take(waiter_).release();  // handed over as it was cancelled: pass it on
      }
      finish(CallResult{std::nullopt, Status(Code::kCancelled, "cancelled while waiting for a bulkhead slot")});
      return;
    case Phase::kSending:
      attempt_->cancel();  // its done (kCancelled) comes as a task of its own
      return;
    case Phase::kWaiting:
      loop_.cancel_timer(timer_);
      timer_ = 0;
      advance(call_.on_waited(true));
      return;
  }
}

void AsyncCall::finish(CallResult result) {
  phase_ = Phase::kDone;
  ended_.store(true, std::memory_order_release);
  call_.hold(bulkhead::Slot());  // the slot goes back before the caller hears of the outcome
  if (linked_id_ != 0) linked_->unsubscribe(linked_id_);
  CallDone done = std::move(done_);
  done(std::move(result));
  client_.forget(this);
}

}  // namespace humus::client
