#include "common/mutex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

namespace humus {
namespace {
namespace HUMUS_UNITY_ID {

// Whether another thread can take `mu` now (and gives it back at once): a try_lock from the thread that holds
// a std::mutex is undefined, from another one it is the question "is it held?".
template <typename M>
bool free_elsewhere(M& mu) {
  bool taken = false;
  std::thread([&] {
    if (mu.try_lock()) {
      taken = true;
      mu.unlock();
    }
  }).join();
  return taken;
}

TEST(MutexLock, HoldsForItsScope) {
  Mutex mu;
  {
    MutexLock lock(mu);
    EXPECT_FALSE(free_elsewhere(mu));
  }
  EXPECT_TRUE(free_elsewhere(mu));
}

TEST(MutexLock, LetsGoAndTakesAgainWithinItsScope) {
  Mutex mu;
  {
    MutexLock lock(mu);
    lock.unlock();
    EXPECT_TRUE(free_elsewhere(mu));
    lock.lock();
    EXPECT_FALSE(free_elsewhere(mu));
  }
  EXPECT_TRUE(free_elsewhere(mu));
}

TEST(MutexLock, LetGoAtTheEndOfItsScopeStaysFree) {
  Mutex mu;
  {
    MutexLock lock(mu);
    lock.unlock();
  }  // the destructor does not unlock a second time
  EXPECT_TRUE(free_elsewhere(mu));
  MutexLock again(mu);  // and the mutex still works
  EXPECT_FALSE(free_elsewhere(mu));
}

TEST(RecursiveMutex, TheHolderTakesItAgain) {
  RecursiveMutex mu;
  int depth = 0;
  // The re-entry goes through a std::function, as a user's callback does in the metrics registry: the
  // analysis does not follow it, and the lock is taken twice on this thread.
  std::function<void(int)> enter = [&](int left) {
    MutexLock lock(mu);
    ++depth;
    if (left > 0) enter(left - 1);
  };
  enter(2);
  EXPECT_EQ(depth, 3);
  EXPECT_TRUE(free_elsewhere(mu));
}

TEST(CondVar, WaitReturnsWithTheMutexHeldOnceNotified) {
  Mutex mu;
  CondVar cv;
  bool ready = false;
  std::thread notifier([&] {
    MutexLock lock(mu);
    ready = true;
    cv.notify_all();
  });
  {
    MutexLock lock(mu);
    while (!ready) cv.wait(mu);
    EXPECT_TRUE(ready);
    EXPECT_FALSE(free_elsewhere(mu));
  }
  notifier.join();
  EXPECT_TRUE(free_elsewhere(mu));
}

TEST(CondVar, WaitUntilAPassedDeadlineTimesOutHoldingTheMutex) {
  Mutex mu;
  CondVar cv;
  MutexLock lock(mu);
  const auto passed = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  EXPECT_EQ(cv.wait_until(mu, passed), std::cv_status::timeout);
  EXPECT_FALSE(free_elsewhere(mu));
}

TEST(CondVar, WaitUntilReturnsNoTimeoutWhenNotifiedFirst) {
  Mutex mu;
  CondVar cv;
  bool ready = false;
  std::thread notifier([&] {
    MutexLock lock(mu);
    ready = true;
    cv.notify_one();
  });
  {
    MutexLock lock(mu);
    // A day: the wait ends by the notification (or a spurious wake-up), never by the deadline.
    const auto far = std::chrono::steady_clock::now() + std::chrono::hours(24);
    while (!ready) EXPECT_EQ(cv.wait_until(mu, far), std::cv_status::no_timeout);
  }
  notifier.join();
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus
