// A set of addresses in one flat table (open addressing, linear probing), for the handle registry
// (handle.cc). Why not std::unordered_set: it allocates a node per element, so every handle made and freed
// paid a malloc and a free for its registry entry, and every lookup followed a pointer to the node. Here an
// insert allocates nothing once the table has grown to the set's high-water mark, and a lookup reads
// adjacent slots. Not thread-safe: the registry holds its shard's lock around every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace humus::capi {

class AddressSet {
 public:
  // Adds `p`, which must not be in the set (a live handle's address is registered once) and must not be
  // nullptr or 1, which mark free and erased slots.
  void insert(const void* p) {
    if ((used_ + 1) * 4 > slots_.size() * 3) rehash();
    const uintptr_t key = reinterpret_cast<uintptr_t>(p);
    for (size_t i = home(key);; i = (i + 1) & mask()) {
      if (slots_[i] == kEmpty || slots_[i] == kErased) {
        if (slots_[i] == kEmpty) ++used_;
        slots_[i] = key;
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
    slots_[i] = kErased;  // a later probe must walk past it
    --size_;
    return true;
  }

  // Removes `p`; false when it is not in the set.
  bool erase(const void* p) {
    return erase_unless(p, [](const void*) { return false; });
  }

  bool contains(const void* p) const { return find(reinterpret_cast<uintptr_t>(p)) != kNotFound; }

  size_t size() const { return size_; }

 private:
  static constexpr uintptr_t kEmpty = 0;
  static constexpr uintptr_t kErased = 1;
  static constexpr size_t kNotFound = SIZE_MAX;
  static constexpr size_t kMinSlots = 16;

  size_t mask() const { return slots_.size() - 1; }

  // Allocations are 16-byte aligned: drop the low bits, then spread with a Fibonacci multiply. The registry
  // picks a shard by the top bits of the same product, so a slot is taken from the bits below them.
  size_t home(uintptr_t key) const {
    const uint64_t spread = static_cast<uint64_t>(key >> 4) * 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>(spread >> 8) & mask();
  }

  size_t find(uintptr_t key) const {
    if (slots_.empty()) return kNotFound;
    for (size_t i = home(key);; i = (i + 1) & mask()) {
      if (slots_[i] == key) return i;
      if (slots_[i] == kEmpty) return kNotFound;  // the table always keeps an empty slot (insert's bound)
    }
  }

  // A table with room for the set to double before the next rehash, without the erased slots: it grows
  // with the set, and shrinks back once a burst of handles is freed.
  void rehash() {
    size_t slots = kMinSlots;
    while (slots < (size_ + 1) * 4) slots *= 2;
    std::vector<uintptr_t> old(slots, kEmpty);
    old.swap(slots_);
    used_ = size_;
    for (uintptr_t key : old) {
      if (key == kEmpty || key == kErased) continue;
      size_t i = home(key);
      while (slots_[i] != kEmpty) i = (i + 1) & mask();
      slots_[i] = key;
    }
  }

  std::vector<uintptr_t> slots_;  // kEmpty, kErased or an address; a power of two long, or empty
  size_t size_ = 0;               // addresses held
  size_t used_ = 0;               // slots not kEmpty: addresses and erased marks
};

}  // namespace humus::capi
