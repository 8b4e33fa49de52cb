// The event loop's timers: a binary min-heap of deadlines over a table of slots, which allocates nothing per
// timer once it has grown to the most timers ever armed at once. A std::map keyed by deadline (what it
// replaces) made and freed a node per timer, and a second map to find a timer by its id; every call on the
// loop arms two (its attempt's deadline, libcurl's next timeout) and cancels most of them.
//
// A timer's id names its slot and the slot's generation, so a stale id (a timer that already ran or was
// cancelled, whose slot now holds another) cancels nothing. Cancelling frees the slot and its task at once;
// the heap entry stays until it reaches the top, or until stale entries outnumber live ones, when the heap
// is rebuilt without them (so cancelled far-off deadlines never pile up). Timers due at the same instant run
// in the order they were added. Not thread-safe: the loop thread's alone.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/clock.h"

namespace humus::transport {

class TimerHeap {
 public:
  using Task = std::function<void()>;
  using Id = uint64_t;  // never 0

  Id add(Instant at, Task task);
  // A timer that already ran, was cancelled, or never was: nothing happens.
  void cancel(Id id);

  // The earliest deadline of a live timer, or Instant::max() when none is armed.
  Instant next();
  // The task of the earliest timer due at `now` (removed, its slot free), or an empty Task when none is.
  Task pop_due(Instant now);
  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // Heap entries, live and stale: bounded by about twice the live timers (for tests).
  size_t entries() const { return heap_.size(); }

 private:
  struct Slot {
    Task task;
    uint64_t generation = 0;
    bool armed = false;
  };
  struct Entry {
    Instant at;
    uint64_t order;  // when added: the tie-break between equal deadlines
    uint32_t slot;
    uint64_t generation;
  };

  bool live(const Entry& e) const;
  void drop_stale_top();
  void free_slot(uint32_t slot);
  void compact();

  std::vector<Entry> heap_;  // std::push_heap order: the earliest (at, order) on top
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  size_t live_ = 0;
  size_t stale_ = 0;  // entries of heap_ whose timer was cancelled
  uint64_t next_order_ = 0;
};

}  // namespace humus::transport
