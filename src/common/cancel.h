// A cancel token: the caller gave up on a call. Thread-safe; cancel() may come from any thread at any time.
// It wakes whatever the call is blocked in: a wait on the clock (through the Signal) or a transfer (through
// the waker the transport registers while it polls).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>

#include "common/clock.h"
#include "common/mutex.h"

namespace humus {

class CancelToken {
 public:
  void cancel() {
    // Release pairs with the acquire in cancelled(): a woken poller that sees the flag sees it for good.
    cancelled_.store(true, std::memory_order_release);
    signal_.notify();
    MutexLock lock(mu_);
    if (waker_) waker_();
    for (auto& [id, listener] : listeners_) listener();
  }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // Notified on cancel: sleep on it to wait for a timer or the cancel, whichever comes first.
  Signal& signal() { return signal_; }

  // While set, cancel() calls `waker` (under the token's lock, so clear_waker() returning means no call is in
  // progress and the waker's target may go away).
  void set_waker(std::function<void()> waker) {
    MutexLock lock(mu_);
    waker_ = std::move(waker);
  }
  void clear_waker() {
    MutexLock lock(mu_);
    waker_ = nullptr;
  }

  // Calls `listener` on cancel, once, for calls that do not block in one place — an asynchronous call on the
  // event loop (humus_client_submit). Several may be subscribed at once. Already cancelled: `listener` runs
  // now and 0 is returned. It runs under the token's lock, as the waker does, so it must not subscribe or
  // unsubscribe; after unsubscribe() returns it is not running and never runs again.
  uint64_t subscribe(std::function<void()> listener) {
    {
      MutexLock lock(mu_);
      if (!cancelled()) {
        listeners_.emplace(++last_id_, std::move(listener));
        return last_id_;
      }
    }
    listener();
    return 0;
  }
  void unsubscribe(uint64_t id) {
    MutexLock lock(mu_);
    listeners_.erase(id);
  }

 private:
  std::atomic<bool> cancelled_{false};
  Signal signal_;
  Mutex mu_;
  std::function<void()> waker_ GUARDED_BY(mu_);
  std::map<uint64_t, std::function<void()>> listeners_ GUARDED_BY(mu_);
  uint64_t last_id_ GUARDED_BY(mu_) = 0;
};

}  // namespace humus
