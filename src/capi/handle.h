// Armor for the C ABI's handles (STYLE.md "Armor", sqlite's API armor): a NULL, freed or foreign pointer given
// to any humus_* function is HUMUS_E_MISUSE (or a neutral value, or nothing for a *_free), never undefined
// behaviour.
//
// Two parts, because either alone is not enough. Every handle struct starts with a magic word naming its type;
// but reading that word from freed memory is itself undefined behaviour (ASan reports it), so a process-wide
// registry of live handle addresses is consulted first, and the magic word is read only once the registry
// says the address is a live handle: it then tells a client from a request. What cannot be told apart: a
// freed handle whose memory now holds a new handle of the same type — the pointer is then that new handle.
//
// The check is not a lock on the handle: a handle freed by one thread while another uses it is still the
// caller's race, as the header says per function.
#pragma once

#include <cstdint>

#include "humus_http.h"

namespace humus::capi {

// One per handle type; ASCII, so a core dump shows which handle a word belongs to.
enum class Magic : uint32_t {
  kFreed = 0x44454144,     // "DEAD": written as a handle is freed, for core dumps
  kRuntime = 0x4e555268,   // "hRUN"
  kSettings = 0x54455368,  // "hSET"
  kClient = 0x494c4368,    // "hCLI"
  kRequest = 0x51455268,   // "hREQ"
  kResponse = 0x53455268,  // "hRES"
  kCancel = 0x4e414368,    // "hCAN"
  kCall = 0x4c414368,      // "hCAL"
  kUpstreams = 0x53505568, // "hUPS"
  kError = 0x52524568,     // "hERR"
  kAttempt = 0x54544168,   // "hATT"
  kAttemptRequest = 0x51524168,  // "hARQ"
  kMockRequest = 0x51524d68,  // "hMRQ"
  kMockReply = 0x50524d68,    // "hMRP"
  kStep = 0x50545368,         // "hSTP"
};

// The addresses of the live handles of the process, in shards each under its own mutex for the writers (a
// handle made or freed); a check (find) takes no lock: it reads its shard's table under a seqlock and falls
// back to the lock only while a writer is at work there (handle.cc says why that keeps the armor's
// guarantee). bench/capi_bench.cc measures it.
namespace registry {
// Reads the magic word of a live handle; called only for an address the registry holds.
using MagicCheck = bool (*)(const void* p);
void add(const void* p);
// Removes `p` when it is live and `is_type(p)`; false (and nothing done) otherwise. Atomic with respect to
// every other add/remove/find, so of two threads freeing one handle only one wins.
bool remove(const void* p, MagicCheck is_type);
// True when `p` is live and `is_type(p)`.
bool find(const void* p, MagicCheck is_type);
}  // namespace registry

// The handle types name their magic word `kMagic` and keep it in their first member, `magic`.
template <typename T>
bool has_magic(const void* p) {
  return static_cast<const T*>(p)->magic == T::kMagic;
}

template <typename T>
T* publish(T* handle) {
  registry::add(handle);
  return handle;
}

// `p` when it is a live handle of type T, else nullptr. NULL gives nullptr. Nothing of `*p` is read unless
// the registry holds its address.
template <typename T>
T* live(T* p) {
  return p != nullptr && registry::find(p, &has_magic<T>) ? p : nullptr;
}

// Takes `p` out of the registry for freeing: true when it was a live T (the caller now deletes it), false for
// NULL, a freed or a foreign pointer (the caller does nothing: a double free is harmless).
template <typename T>
bool retire(T* p) {
  if (p == nullptr || !registry::remove(p, &has_magic<T>)) return false;
  p->magic = Magic::kFreed;
  return true;
}

// A view the library lends to a callback on its stack (an attempt, a mock request or reply): live for the
// scope of this guard, so a binding that keeps the pointer past the callback gets HUMUS_E_MISUSE.
template <typename T>
class Lent {
 public:
  explicit Lent(T& view) : view_(view) { publish(&view_); }
  ~Lent() { (void)retire(&view_); }
  Lent(const Lent&) = delete;
  Lent& operator=(const Lent&) = delete;

 private:
  T& view_;
};

// The HUMUS_E_MISUSE report for `argument` of `function` that is not a live handle of its type.
humus_status bad_handle(const char* function, const char* argument, humus_error** err);

}  // namespace humus::capi
