// The asynchronous driver of a call (docs/bindings.md §17.1): the same state machine as the blocking one (call.h), run
// on the runtime's event loop — the bulkhead wait as a queued waiter, attempts through the transport's
// asynchronous side, waits as loop timers — so no thread waits for it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "bulkhead/bulkhead.h"
#include "client/call.h"
#include "client/request.h"
#include "common/cancel.h"
#include "transport/event_loop.h"
#include "transport/transport.h"

namespace humus::client {

using CallDone = std::function<void(CallResult)>;

class AsyncCall : public std::enable_shared_from_this<AsyncCall> {
 public:
  // `forget` runs on the loop thread right after `done`: the client lets go of the call then. `env`,
  // `transport` and `loop` are the client's and must outlive the call until then. `stream`: `done` comes
  // once the final response's headers are in, its body read through Response::stream on the loop
  // (ResponseStream::read_async).
  AsyncCall(const CallEnv& env, transport::Transport& transport, transport::EventLoop& loop, Request request,
            CallDone done, std::function<void(AsyncCall*)> forget, bool stream = false);

  // Any thread: the call ends as soon as the loop gets to it (kCancelled, or the buffered response of a
  // cut-short wait). After it ended: nothing, and nothing is touched but this object — so a handle may be
  // cancelled after its client and runtime are gone.
  void cancel();

 private:
  // Cancelled also by `token`, the caller's (humus_request_set_cancel): held until the call ends.
  void link(std::shared_ptr<CancelToken> token);

  friend class Client;
  enum class Phase { kNew, kQueued, kSending, kReadingAhead, kWaiting, kDone };

  // Loop thread only, from here on.
  void begin();
  void advance(Step step);
  void queue(Instant deadline);  // waits for a bulkhead slot as a queued waiter, bounded by a loop timer
  void finish(CallResult result);
  void on_cancel();
  static void granted(void* self);  // the bulkhead handed over a slot (any thread, bulkhead lock held)
  // Hedging (docs/retries.md §6.8): sends copy `step.copy`, then arms the hedge timer.
  void send_copy(const Step& step);
  void on_copy_done(int copy, transport::WireResult sent);
  void arm_hedge();  // the timer that asks the call for another copy at its hedge_at(), if any
  void cancel_copies(const std::vector<int>& ids);

  bulkhead::Bulkhead& bulkhead_;
  transport::Transport& transport_;
  const bool stream_;
  const Request request_;
  CancelToken token_;
  std::shared_ptr<CancelToken> linked_;  // the caller's token, or null; set before begin() is posted
  uint64_t linked_id_ = 0;               // its subscription (0: none, or it was already cancelled)
  Call call_;  // refers to request_ and token_, declared before it
  CallDone done_;
  std::function<void(AsyncCall*)> forget_;
  transport::EventLoop& loop_;
  bulkhead::Bulkhead::AsyncWaiter waiter_;
  Phase phase_ = Phase::kNew;
  std::atomic<bool> ended_{false};  // set by finish(), before the caller hears of the outcome
  std::unique_ptr<transport::AsyncAttempt> attempt_;
  transport::EventLoop::TimerId timer_ = 0;
  // Hedging: the copies whose `done` has not come yet (a cancelled one until its `done`), by copy id.
  std::vector<std::pair<int, std::unique_ptr<transport::AsyncAttempt>>> copies_;
  transport::EventLoop::TimerId hedge_timer_ = 0;
};

}  // namespace humus::client
