// The stepped driver of a call (humus_client_step_start): the same state machine as the blocking and the
// asynchronous drivers (call.h), run a step at a time on its caller's thread, for a binding with a poller of
// its own (Go's netpoller, tokio, asyncio). Each advance() goes as far as the call goes without waiting and
// says what to wait for next — a socket of the attempt's, the bulkhead's hand-over of a slot, the time of a
// backoff — so no thread of the library runs the call and no thread of the caller's waits inside it.
#pragma once

#include <atomic>
#include <memory>

#include "bulkhead/bulkhead.h"
#include "client/call.h"
#include "client/call_env.h"
#include "client/request.h"
#include "common/cancel.h"
#include "transport/transport.h"

namespace humus::client {

// Not thread-safe: one advance at a time, from any thread.
class SteppedCall {
 public:
  // `env` and `transport` are the client's; they, `request` and `cancel` (may be null) must outlive the call.
  SteppedCall(const CallEnv& env, transport::Transport& transport, const Request& request, CancelToken* cancel);
  // A call not over is given up (Call::abandon): its attempt in flight cut, a wait for a slot abandoned.
  ~SteppedCall();
  SteppedCall(const SteppedCall&) = delete;
  SteppedCall& operator=(const SteppedCall&) = delete;

  // Runs the call as far as it goes without waiting: true once it is over (its outcome in result()), else
  // false with `wait` set. A wait a single descriptor cannot serve is waited for inside, as the blocking
  // driver waits (CurlStream::open_step).
  bool advance(transport::StepWait& wait);
  CallResult& result() { return step_.result; }

 private:
  // kAcquire: the step after the slot came or was refused; nothing while the call waits in the bulkhead's
  // queue, with `wait` on the step's wake-up descriptor.
  std::optional<Step> acquire(transport::StepWait& wait);
  std::optional<Step> queue(transport::StepWait& wait);  // acquire_or_queue() found no free slot
  Step leave_queue(Status why);  // cancelled while queued: a slot handed over meanwhile is passed on
  // The bulkhead's on_grant: on the releasing thread, under the bulkhead's lock, so it only wakes the step.
  static void granted(void* self);
  // Completes the step in progress as cancelled, without waiting (the destructor, after Call::abandon).
  Step give_up_step();
  bool cancelled() const { return cancel_ != nullptr && cancel_->cancelled(); }

  bulkhead::Bulkhead& bulkhead_;
  Clock& clock_;
  transport::Transport& transport_;
  CancelToken* const cancel_;
  Call call_;
  Step step_;
  bool started_ = false;
  std::unique_ptr<transport::Transport::Stepped> attempt_;  // kSend's attempt in flight; before call_ dies

  // The bulkhead's queue (kAcquire when no slot was free).
  bulkhead::Bulkhead::AsyncWaiter waiter_;
  bool queued_ = false;
  Instant queued_at_{};
  Instant queue_end_{};       // the wait for a slot ends then: bulkhead.max_wait or the call's deadline
  bool deadline_first_ = false;
  std::atomic<bool> granted_{false};
  // An eventfd granted() writes, made on the call's first wait in the queue. Atomic: granted() may run on
  // another thread while it is made (it then finds -1 and only sets granted_, which queue() reads next).
  std::atomic<int> wake_fd_{-1};
};

}  // namespace humus::client
