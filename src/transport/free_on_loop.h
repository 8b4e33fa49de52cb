// Memory given back to the thread of the event loop that allocated it. What an asynchronous call hands its
// caller (a whole response) is made on the loop thread and freed on whichever thread the caller is done with
// it. glibc's allocator serves that pattern badly: the freeing thread's cache fills with chunks it never
// allocates itself, the rest go back to the loop's arena under its lock, and the loop, whose cache never
// sees them again, allocates every next response the slow way, consolidating fragments as it goes
// (bench/HISTORY.md, 2026-12-04 session 19: an allocator that handles it, jemalloc, made the Python
// AsyncClient 30 % faster). Given back, the memory is freed on the loop thread, in batches, by a task posted
// to the loop, and its next allocations find it in its own cache.
//
// Thread-safe. Shared by the loop and by what waits to be freed, so it outlives either.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace humus::transport {

class EventLoop;

class FreeOnLoop {
 public:
  using Destroy = void (*)(void*);

  static std::shared_ptr<FreeOnLoop> make(EventLoop& loop);

  // Any thread. True: destroy(object) runs on the loop thread soon, after the tasks posted before. False (this
  // is the loop thread, or the loop is gone): the caller destroys it itself, now.
  bool give_back(void* object, Destroy destroy);

  // The loop's destructor, before anything else: what is waiting is destroyed on the calling thread, and
  // give_back refuses from then on.
  void detach();

 private:
  explicit FreeOnLoop(EventLoop& loop) : loop_(&loop) {}
  void free_waiting();  // the loop thread

  std::weak_ptr<FreeOnLoop> self_;
  Mutex mu_;
  EventLoop* loop_ GUARDED_BY(mu_);  // null once detached
  std::vector<std::pair<void*, Destroy>> waiting_ GUARDED_BY(mu_);
  std::vector<std::pair<void*, Destroy>> spare_;    // free_waiting's alone: an empty list for waiting_ to become
};

}  // namespace humus::transport
