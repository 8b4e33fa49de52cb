#include "transport/timer_heap.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace humus::transport {

namespace {

// An id is the slot in its high 24 bits and the slot's generation in the low 40: a slot reused a million
// times a second repeats a generation after twelve days, by which time no stale id of it is still held.
constexpr int kGenerationBits = 40;
constexpr uint64_t kGenerationMask = (uint64_t{1} << kGenerationBits) - 1;
constexpr size_t kMaxSlots = size_t{1} << (64 - kGenerationBits);

// std::push_heap keeps the greatest on top; the earliest deadline must be, and of equal ones the first added.
struct Later {
  template <typename E>
  bool operator()(const E& a, const E& b) const {
    return a.at != b.at ? a.at > b.at : a.order > b.order;
  }
};

}  // namespace

TimerHeap::Id TimerHeap::add(Instant at, Task task) {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (slots_.size() >= kMaxSlots)
      throw std::length_error("event loop: more timers armed at once than it can name");
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.generation = (s.generation + 1) & kGenerationMask;
  if (s.generation == 0) s.generation = 1;  // so that no id is 0
  s.task = std::move(task);
  s.armed = true;
  heap_.push_back(Entry{at, next_order_++, slot, s.generation});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
  ++live_;
  return (uint64_t{slot} << kGenerationBits) | s.generation;
}

void TimerHeap::cancel(Id id) {
  const uint64_t slot = id >> kGenerationBits;
  if (slot >= slots_.size()) return;
  const Slot& s = slots_[slot];
  if (!s.armed || s.generation != (id & kGenerationMask)) return;
  ++stale_;  // before the slot is freed: the task's release may compact, which counts this entry
  free_slot(static_cast<uint32_t>(slot));
  if (stale_ > 64 && stale_ > live_) compact();
}

Instant TimerHeap::next() {
  drop_stale_top();
  return heap_.empty() ? Instant::max() : heap_.front().at;
}

TimerHeap::Task TimerHeap::pop_due(Instant now) {
  drop_stale_top();
  if (heap_.empty() || heap_.front().at > now) return Task();
  const uint32_t slot = heap_.front().slot;
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  heap_.pop_back();
  Task task = std::move(slots_[slot].task);
  free_slot(slot);
  return task;
}

bool TimerHeap::live(const Entry& e) const {
  const Slot& s = slots_[e.slot];
  return s.armed && s.generation == e.generation;
}

void TimerHeap::drop_stale_top() {
  while (!heap_.empty() && !live(heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
    if (stale_ > 0) --stale_;
  }
}

void TimerHeap::free_slot(uint32_t slot) {
  // What the task holds (a call, say) is released now, not when its entry leaves the heap; last, once the
  // bookkeeping is done, since its destructors may add or cancel timers (and so move slots_).
  Task released = std::move(slots_[slot].task);
  slots_[slot].task = nullptr;
  slots_[slot].armed = false;
  free_slots_.push_back(slot);
  --live_;
}

void TimerHeap::compact() {
  std::erase_if(heap_, [this](const Entry& e) { return !live(e); });
  std::make_heap(heap_.begin(), heap_.end(), Later{});
  stale_ = 0;
}

}  // namespace humus::transport
