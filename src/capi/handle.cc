#include "capi/handle.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <string>

#include "capi/address_set.h"
#include "capi/error.h"
#include "common/mutex.h"

namespace humus::capi {
namespace {

// Enough shards that threads working on different handles rarely meet on one lock.
constexpr size_t kShards = 64;

// A shard's `live` is written under `mu` and read without it (registry::find, the hot path: every handle
// argument of every call), as a seqlock: a writer makes `seq` odd, changes the set, makes it even again; a
// reader reads `seq`, probes the set, reads `seq` again, and trusts its probe only when both reads agree
// and are even. Otherwise it retries, and after a few tries takes the lock as a writer would.
//
// Why the reader is safe (the armor's guarantee unchanged: nothing of *p is read unless p was live):
// - The probe reads only atomic slots of tables that live as long as the set (address_set.h), so a writer
//   racing it can give a wrong answer but never a wild read; the validation throws a wrong answer away.
// - The magic word is read only after a validated probe found p, i.e. p was registered at some moment
//   between the reader's two reads of `seq`. Its publish wrote the magic word before registry::add, whose
//   release store of `seq` the reader's first, acquire, read of `seq` synchronises with (or with a later
//   writer's, ordered after add by the mutex): the word is visible, for ASan, TSan and the CPU alike.
// - p can be retired after that moment only by a free of p itself, concurrent with this use of p: the
//   caller's race, as it always was (before, the handle could be freed the instant find unlocked).
// Writers (publish, retire) keep the lock, so of two threads freeing one handle only one wins.
struct alignas(64) Shard {  // one cache line each: no false sharing between neighbouring locks
  Mutex mu;
  // Odd while a writer changes `live`. Writer: +1 relaxed, release fence, the change, +1 release (each
  // under mu). Reader: acquire load, the probe (relaxed loads), acquire fence, relaxed load: the fences
  // order the probe between the two loads (the seqlock of Boehm, "Can seqlocks get along with programming
  // language memory models?", 2012).
  std::atomic<uint64_t> seq{0};
  AddressSet live GUARDED_BY(mu);
};

// Brackets one change of a shard's set, with its lock held.
class SeqWrite {
 public:
  explicit SeqWrite(Shard& s) : s_(s) {
    s_.seq.store(s_.seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  ~SeqWrite() { s_.seq.store(s_.seq.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  SeqWrite(const SeqWrite&) = delete;
  SeqWrite& operator=(const SeqWrite&) = delete;

 private:
  Shard& s_;
};

// Tries before a reader takes the lock: a writer holds a shard for a few dozen instructions.
constexpr int kReadTries = 4;

std::array<Shard, kShards>* all_shards = nullptr;

// ThreadSanitizer's deadlock detector follows at most 64 locks held by one thread, and aborts past them:
// under it the fork does not hold the registry's (a child of a multithreaded process is TSan's to refuse
// anyway, docs/fork.md §23.3).
#if defined(__SANITIZE_THREAD__)
#define HUMUS_REGISTRY_HELD_ACROSS_FORK 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HUMUS_REGISTRY_HELD_ACROSS_FORK 0
#endif
#endif
#ifndef HUMUS_REGISTRY_HELD_ACROSS_FORK
#define HUMUS_REGISTRY_HELD_ACROSS_FORK 1
#endif

#if HUMUS_REGISTRY_HELD_ACROSS_FORK
// Every C function takes one of these locks for a few instructions: a fork() while another thread held one
// would copy it held into the child, whose first call on a handle of that shard would wait for ever. So the
// fork holds them all (docs/fork.md §23.3): taken before it, given back after it in both processes. Leaf
// locks: nothing is taken while one is held, so taking them all cannot deadlock.
void lock_all_shards() NO_THREAD_SAFETY_ANALYSIS {
  for (Shard& s : *all_shards) s.mu.lock();
}
void unlock_all_shards() NO_THREAD_SAFETY_ANALYSIS {
  for (Shard& s : *all_shards) s.mu.unlock();
}
#endif

// Never destroyed: a handle freed from a static destructor at exit still finds its registry.
std::array<Shard, kShards>& shards() {
  static auto* all = [] {
    all_shards = new std::array<Shard, kShards>();
#if HUMUS_REGISTRY_HELD_ACROSS_FORK
    pthread_atfork(&lock_all_shards, &unlock_all_shards, &unlock_all_shards);
#endif
    return all_shards;
  }();
  return *all;
}

Shard& shard_of(const void* p) {
  // Allocations are 16-byte aligned: drop the low bits, then spread with a Fibonacci multiply.
  const auto bits = reinterpret_cast<uintptr_t>(p) >> 4;
  return shards()[(bits * 0x9E3779B97F4A7C15ULL) >> (64 - 6)];
}
static_assert(kShards == 64, "shard_of takes the top 6 bits");

}  // namespace

namespace registry {

void add(const void* p) {
  Shard& s = shard_of(p);
  MutexLock lock(s.mu);
  SeqWrite write(s);
  s.live.insert(p);
}

bool remove(const void* p, MagicCheck is_type) {
  Shard& s = shard_of(p);
  MutexLock lock(s.mu);
  if (!s.live.contains(p) || !is_type(p)) return false;  // nothing changes: readers need not retry
  SeqWrite write(s);
  return s.live.erase(p);
}

// Without the lock when no writer is at work on the shard (see Shard): no store to shared memory, so
// threads checking handles of one shard no longer pass its lock's cache line between them.
bool find(const void* p, MagicCheck is_type) NO_THREAD_SAFETY_ANALYSIS {
  Shard& s = shard_of(p);
  for (int i = 0; i < kReadTries; ++i) {
    const uint64_t before = s.seq.load(std::memory_order_acquire);
    if ((before & 1) != 0) continue;
    const bool held = s.live.probe_concurrently(p);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.seq.load(std::memory_order_relaxed) == before) return held && is_type(p);
  }
  MutexLock lock(s.mu);
  return s.live.contains(p) && is_type(p);
}

}  // namespace registry

humus_status bad_handle(const char* function, const char* argument, humus_error** err) {
  return report(Status(Code::kMisuse, std::string(function) + ": " + argument +
                                          " is not a live handle (NULL, freed, or of another type)",
                       {argument}),
                err);
}

}  // namespace humus::capi
