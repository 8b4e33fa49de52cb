// A set of addresses in one flat table (open addressing, linear probing), for the handle registry
// (handle.cc). Why not std::unordered_set: it allocates a node per element, so every handle made and freed
// paid a malloc and a free for its registry entry, and every lookup followed a pointer to the node. Here an
// insert allocates nothing once the table has grown to the set's high-water mark, and a lookup reads
// adjacent slots.
//
// One writer at a time (the registry holds its shard's lock around insert and erase), any number of
// readers without the lock through probe_concurrently, whose answer the registry's seqlock validates. For
// those readers to touch only live memory, a table is never freed while the set lives: the set grows its
// table (the old one kept, so at most as many bytes again as the largest table) and never shrinks it, and
// clears the erased marks by rebuilding in place. Every slot is an atomic word, so a reader racing a writer
// reads some value of each slot, never a torn one (and ThreadSanitizer sees no data race).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace humus::capi {

class AddressSet {
 public:
  AddressSet() = default;
  AddressSet(const AddressSet&) = delete;
  AddressSet& operator=(const AddressSet&) = delete;

  // Adds `p`, which must not be in the set (a live handle's address is registered once) and must not be
  // nullptr or 1, which mark free and erased slots.
  void insert(const void* p) {
    if (table_ == nullptr || (used_ + 1) * 4 > table_->size * 3) rehash();
    Table& t = *table_;
    const uintptr_t key = reinterpret_cast<uintptr_t>(p);
    for (size_t i = home(key, t.size);; i = (i + 1) & (t.size - 1)) {
      const uintptr_t slot = t.slots[i].load(std::memory_order_relaxed);
      if (slot == kEmpty || slot == kErased) {
        if (slot == kEmpty) ++used_;
        t.slots[i].store(key, std::memory_order_relaxed);
        ++size_;
        return;
      }
    }
  }

  // Removes `p` when it is in the set and `keep(p)` is false; false when nothing was removed. One probe for
  // the registry's check-then-remove.
  template <typename Keep>
  bool erase_unless(const void* p, Keep keep) {
    const size_t i = find(reinterpret_cast<uintptr_t>(p));
    if (i == kNotFound || keep(p)) return false;
    table_->slots[i].store(kErased, std::memory_order_relaxed);  // a later probe must walk past it
    --size_;
    return true;
  }

  // Removes `p`; false when it is not in the set.
  bool erase(const void* p) {
    return erase_unless(p, [](const void*) { return false; });
  }

  // The writer's lookup (or any lookup with no writer running).
  bool contains(const void* p) const { return find(reinterpret_cast<uintptr_t>(p)) != kNotFound; }

  // A lookup that may run while a writer changes the set: memory-safe whatever the writer does, but its
  // answer means something only when nothing was written meanwhile, which the caller checks (handle.cc's
  // seqlock). Bounded: a table changing under it cannot make it probe for ever.
  bool probe_concurrently(const void* p) const {
    const Table* t = current_.load(std::memory_order_acquire);  // its slots, made before, are visible
    if (t == nullptr) return false;
    const uintptr_t key = reinterpret_cast<uintptr_t>(p);
    size_t i = home(key, t->size);
    for (size_t probes = 0; probes < t->size; ++probes, i = (i + 1) & (t->size - 1)) {
      const uintptr_t slot = t->slots[i].load(std::memory_order_relaxed);
      if (slot == key) return true;
      if (slot == kEmpty) return false;
    }
    return false;
  }

  size_t size() const { return size_; }

 private:
  static constexpr uintptr_t kEmpty = 0;
  static constexpr uintptr_t kErased = 1;
  static constexpr size_t kNotFound = SIZE_MAX;
  static constexpr size_t kMinSlots = 16;

  struct Table {
    explicit Table(size_t n) : size(n), slots(new std::atomic<uintptr_t>[n]) {
      for (size_t i = 0; i < n; ++i) slots[i].store(kEmpty, std::memory_order_relaxed);
    }
    const size_t size;  // a power of two
    std::unique_ptr<std::atomic<uintptr_t>[]> slots;
  };

  // Allocations are 16-byte aligned: drop the low bits, then spread with a Fibonacci multiply. The registry
  // picks a shard by the top bits of the same product, so a slot is taken from the bits below them.
  static size_t home(uintptr_t key, size_t slots) {
    const uint64_t spread = static_cast<uint64_t>(key >> 4) * 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>(spread >> 8) & (slots - 1);
  }

  size_t find(uintptr_t key) const {
    if (table_ == nullptr) return kNotFound;
    const Table& t = *table_;
    for (size_t i = home(key, t.size);; i = (i + 1) & (t.size - 1)) {
      const uintptr_t slot = t.slots[i].load(std::memory_order_relaxed);
      if (slot == key) return i;
      if (slot == kEmpty) return kNotFound;  // the table always keeps an empty slot (insert's bound)
    }
  }

  // Room for the set to double before the next rehash, without the erased slots: a larger table when the
  // set outgrew this one (this one kept for readers still on it), else this one rebuilt in place.
  void rehash() {
    size_t slots = kMinSlots;
    while (slots < (size_ + 1) * 4) slots *= 2;
    std::vector<uintptr_t> keys;
    keys.reserve(size_);
    if (table_ != nullptr) {
      for (size_t i = 0; i < table_->size; ++i) {
        const uintptr_t key = table_->slots[i].load(std::memory_order_relaxed);
        if (key != kEmpty && key != kErased) keys.push_back(key);
      }
    }
    if (table_ == nullptr || slots > table_->size) {
      tables_.push_back(std::make_unique<Table>(slots));
      table_ = tables_.back().get();
    } else {
      for (size_t i = 0; i < table_->size; ++i) table_->slots[i].store(kEmpty, std::memory_order_relaxed);
    }
    Table& t = *table_;
    for (uintptr_t key : keys) {
      size_t i = home(key, t.size);
      while (t.slots[i].load(std::memory_order_relaxed) != kEmpty) i = (i + 1) & (t.size - 1);
      t.slots[i].store(key, std::memory_order_relaxed);
    }
    used_ = size_;
    current_.store(table_, std::memory_order_release);  // a reader that loads it sees its slots filled
  }

  std::vector<std::unique_ptr<Table>> tables_;  // every table the set had, the current one last
  Table* table_ = nullptr;                       // the writer's view of current_
  std::atomic<const Table*> current_{nullptr};   // what readers probe
  size_t size_ = 0;                              // addresses held
  size_t used_ = 0;                              // slots not kEmpty: addresses and erased marks
};

}  // namespace humus::capi
