// The core's locks: std::mutex and std::recursive_mutex as capabilities the thread-safety analysis knows
// (libstdc++'s are not annotated, so a GUARDED_BY naming one would be checked against nothing), an RAII lock
// that can be let go and taken again within its scope (what std::unique_lock was used for), and a condition
// variable that waits on a Mutex the analysis sees held before and after. Same costs as the std types they
// wrap: every member is inline and forwards to them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.h"

namespace humus {

class CondVar;

template <typename Native>
class CAPABILITY("mutex") BasicMutex {
 public:
  // constexpr for std::mutex, as std::mutex's own: a global Mutex is initialised before any code runs.
  constexpr BasicMutex() = default;
  BasicMutex(const BasicMutex&) = delete;
  BasicMutex& operator=(const BasicMutex&) = delete;

  void lock() ACQUIRE() { native_.lock(); }
  void unlock() RELEASE() { native_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return native_.try_lock(); }

 private:
  friend class CondVar;
  Native native_;
};

using Mutex = BasicMutex<std::mutex>;
// Taken again by the thread that holds it without deadlock. The analysis reports a second acquire it can see
// as an error, so the re-entry it allows must come through code the analysis does not follow (a user's
// callback), as the metrics registry's does.
using RecursiveMutex = BasicMutex<std::recursive_mutex>;

// Holds `mu` from construction to the end of the scope, like std::lock_guard; unlock() and lock() let it go
// and take it again inside the scope, like std::unique_lock (the analysis tracks both). The destructor gives
// it back only when held. `MutexLock lock(mu_);` deduces the mutex type.
template <typename M>
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(M& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() RELEASE() {
    mu_.unlock();
    held_ = false;
  }
  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }

 private:
  M& mu_;
  bool held_ = true;
};

// std::condition_variable on a Mutex. The waits require the mutex held, and return with it held, as the
// analysis is told; a caller re-checks its condition in a loop (`while (!ready_) cv_.wait(mu_);`), which is
// what std::condition_variable's predicate overloads do, written where the analysis sees the guarded reads.
class CondVar {
 public:
  void wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.native_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: it is the caller's
  }

  // std::cv_status::timeout once `until` has passed, else no_timeout (woken, perhaps spuriously).
  template <typename Clock, typename Duration>
  std::cv_status wait_until(Mutex& mu, const std::chrono::time_point<Clock, Duration>& until) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.native_, std::adopt_lock);
    const std::cv_status status = cv_.wait_until(lock, until);
    lock.release();  // still held: it is the caller's
    return status;
  }

  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace humus
