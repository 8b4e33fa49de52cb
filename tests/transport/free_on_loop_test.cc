// Memory given back to the event loop's thread (src/transport/free_on_loop.h): freed there, in order, from
// any number of threads; refused on the loop thread itself and once the loop is going; what waits when the
// loop goes is freed by its destructor, nothing lost, nothing freed twice.
#include "transport/free_on_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "testing/virtual_clock.h"
#include "transport/event_loop.h"

namespace humus::transport {
namespace {
namespace HUMUS_UNITY_ID {

// What a destroy records: the thread it ran on and the order it ran in.
struct Tracked {
  std::atomic<int>* freed;
  std::vector<int>* order;  // written on the thread that destroys; read once that thread is known done
  int id;
  std::thread::id* freed_on;
};

void destroy_tracked(void* p) {
  auto* t = static_cast<Tracked*>(p);
  if (t->order != nullptr) t->order->push_back(t->id);
  if (t->freed_on != nullptr) *t->freed_on = std::this_thread::get_id();
  t->freed->fetch_add(1);
  delete t;
}

// The loop's thread id, asked on the loop.
std::thread::id loop_thread(EventLoop& loop) {
  std::promise<std::thread::id> id;
  loop.post([&] { id.set_value(std::this_thread::get_id()); });
  return id.get_future().get();
}

// Waits until every task posted before now has run.
void settle(EventLoop& loop) {
  std::promise<void> done;
  loop.post([&] { done.set_value(); });
  done.get_future().get();
}

TEST(FreeOnLoopTest, WhatAnotherThreadGivesBackIsFreedOnTheLoopInOrder) {
  EventLoop loop(RealClock::instance(), nullptr);
  ASSERT_NE(loop.free_on_loop(), nullptr);
  const std::thread::id loop_id = loop_thread(loop);
  std::atomic<int> freed{0};
  std::vector<int> order;
  std::vector<std::thread::id> threads(5);
  for (int i = 0; i < 5; ++i) {
    auto* t = new Tracked{&freed, &order, i, &threads[static_cast<size_t>(i)]};
    ASSERT_TRUE(loop.free_on_loop()->give_back(t, destroy_tracked));
  }
  settle(loop);
  EXPECT_EQ(freed.load(), 5);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  for (const std::thread::id& id : threads) EXPECT_EQ(id, loop_id);
}

TEST(FreeOnLoopTest, TheLoopThreadItselfIsRefused) {
  EventLoop loop(RealClock::instance(), nullptr);
  std::atomic<int> freed{0};
  std::promise<bool> taken;
  auto* t = new Tracked{&freed, nullptr, 0, nullptr};
  loop.post([&] { taken.set_value(loop.free_on_loop()->give_back(t, destroy_tracked)); });
  EXPECT_FALSE(taken.get_future().get());  // the caller frees it itself
  EXPECT_EQ(freed.load(), 0);
  destroy_tracked(t);
}

TEST(FreeOnLoopTest, AGoneLoopRefusesAndFreesWhatWaited) {
  std::atomic<int> freed{0};
  std::shared_ptr<FreeOnLoop> home;
  // The loop is held up by a task until three objects are freed, so they still wait when it goes: its
  // destructor must free them itself before it stops.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::thread unblock([&] {
    while (freed.load() < 3) std::this_thread::yield();
    release.set_value();
  });
  {
    EventLoop loop(RealClock::instance(), nullptr);
    home = loop.free_on_loop();
    loop.post([released] { released.wait(); });
    for (int i = 0; i < 3; ++i) {
      auto* t = new Tracked{&freed, nullptr, i, nullptr};
      const bool taken = home->give_back(t, destroy_tracked);
      EXPECT_TRUE(taken);
      if (!taken) destroy_tracked(t);
    }
  }
  unblock.join();
  EXPECT_EQ(freed.load(), 3);
  auto* late = new Tracked{&freed, nullptr, 9, nullptr};
  EXPECT_FALSE(home->give_back(late, destroy_tracked));
  destroy_tracked(late);
  EXPECT_EQ(freed.load(), 4);
}

TEST(FreeOnLoopTest, ManyThreadsGiveBackAtOnceAndEveryObjectIsFreedOnce) {
  std::atomic<int> freed{0};
  constexpr int kThreads = 8;
  constexpr int kEach = 2000;
  {
    EventLoop loop(RealClock::instance(), nullptr);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&] {
        for (int k = 0; k < kEach; ++k) {
          auto* t = new Tracked{&freed, nullptr, k, nullptr};
          if (!loop.free_on_loop()->give_back(t, destroy_tracked)) destroy_tracked(t);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    settle(loop);
    EXPECT_EQ(freed.load(), kThreads * kEach);
  }
  EXPECT_EQ(freed.load(), kThreads * kEach);
}

TEST(FreeOnLoopTest, AVirtualClockLoopHasNone) {
  testing::VirtualClock clock;
  EventLoop loop(clock, &clock);
  EXPECT_EQ(loop.free_on_loop(), nullptr);
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::transport
