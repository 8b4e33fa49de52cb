#include "transport/free_on_loop.h"

#include "transport/event_loop.h"

namespace humus::transport {

std::shared_ptr<FreeOnLoop> FreeOnLoop::make(EventLoop& loop) {
  std::shared_ptr<FreeOnLoop> made(new FreeOnLoop(loop));
  made->self_ = made;
  return made;
}

bool FreeOnLoop::give_back(void* object, Destroy destroy) {
  MutexLock lock(mu_);
  if (loop_ == nullptr || loop_->on_loop_thread()) return false;
  waiting_.emplace_back(object, destroy);
  // One task per batch: whatever is given back before it runs goes with it. Posted under mu_, so detach()
  // cannot come between the check above and the post.
  if (waiting_.size() == 1) loop_->post([self = self_.lock()] { self->free_waiting(); });
  return true;
}

void FreeOnLoop::free_waiting() {
  // The list itself changes places with a spare, as the loop's task queue does (event_loop.cc), so it is
  // not freed here and grown again on the giving threads at every batch.
  constexpr size_t kKeptCapacity = 1024;
  std::vector<std::pair<void*, Destroy>> batch = std::move(spare_);
  {
    MutexLock lock(mu_);
    batch.swap(waiting_);
  }
  for (auto& [object, destroy] : batch) destroy(object);
  batch.clear();
  if (batch.capacity() <= kKeptCapacity) spare_ = std::move(batch);
}

void FreeOnLoop::detach() {
  std::vector<std::pair<void*, Destroy>> batch;
  {
    MutexLock lock(mu_);
    loop_ = nullptr;
    batch.swap(waiting_);
  }
  for (auto& [object, destroy] : batch) destroy(object);
}

}  // namespace humus::transport
