#include "capi/handle.h"

#include <pthread.h>

#include <array>
#include <cstddef>
#include <string>

#include "capi/address_set.h"
#include "capi/error.h"
#include "common/mutex.h"

namespace humus::capi {
namespace {

// Enough shards that threads working on different handles rarely meet on one lock.
constexpr size_t kShards = 64;

struct alignas(64) Shard {  // one cache line each: no false sharing between neighbouring locks
  Mutex mu;
  AddressSet live GUARDED_BY(mu);
};

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
  s.live.insert(p);
}

bool remove(const void* p, MagicCheck is_type) {
  Shard& s = shard_of(p);
  MutexLock lock(s.mu);
  return s.live.erase_unless(p, [is_type](const void* q) { return !is_type(q); });
}

bool find(const void* p, MagicCheck is_type) {
  Shard& s = shard_of(p);
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
