// A streamed body of an asynchronous call read ahead on the event loop into a bounded ring of its own, for a
// reader on another thread to copy out of without waiting (docs/bodies.md §7.3). The loop keeps one read in
// flight while the ring has room; take() never blocks: with nothing to copy it says so (kWait), and `ready`
// runs once when there is something (bytes, the end or the failure). Memory stays at the ring's size whatever
// the body's, and a reader crosses to the loop only to be woken — the shape every binding with a scheduler of
// its own needs (Go's goroutines, Rust's wakers, asyncio), written once here.
//
// While the body flows (reads come back full), a waiting reader is woken once half the ring is in, not per
// read: each wake-up costs a binding a thread or task switch. A short read (the socket was drained), the end,
// a ring the loop stopped filling, or hurry() wake it at once.
//
// Thread-safety: take(), hurry() and the destructor from any thread, take() by one reader at a time; the reads,
// close() and `ready` on the loop thread (hurry() may run `ready` on its caller's thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "common/mutex.h"
#include "common/status.h"
#include "transport/event_loop.h"

namespace humus::client {

class BodyRing : public std::enable_shared_from_this<BodyRing> {
 public:
  // The ring's size unless the caller asks for another; a body whose Content-Length is kLargeBody or more
  // gets kLargeRing (fewer wake-ups per byte), and one below kWholeBody is held whole (`whole`).
  static constexpr size_t kRing = size_t{64} * 1024;
  static constexpr size_t kLargeRing = size_t{256} * 1024;
  static constexpr uint64_t kLargeBody = uint64_t{1} << 20;
  static constexpr uint64_t kWholeBody = kLargeRing;  // HUMUS_READ_AHEAD_WHOLE; no ring is larger than the large one

  using ReadDone = std::function<void(Result<size_t>)>;
  // One read of the body, on the loop thread: at least one byte into `buf`, 0 at the end, or the failure. `done`
  // may run before it returns.
  using Source = std::function<void(char* buf, size_t cap, ReadDone done)>;
  using Ready = std::function<void()>;

  // What a ring for a body of `content_length` (unknown: nullopt) holds: `asked` bytes (0: kRing or kLargeRing
  // by the length, the body and one byte for one under kWholeBody), never more than the body and one byte —
  // the read that finds the end needs room too. With `hold_whole`, a body under kWholeBody is held whole
  // (`whole`); without, its bytes are told as they come.
  struct Shape {
    size_t capacity = kRing;
    bool whole = false;
    bool fits = false;  // the capacity holds the whole body (a ring of its length and one byte)
  };
  static Shape shape_for(std::optional<uint64_t> content_length, size_t asked, bool hold_whole);

  // Starts reading on `loop` (from any thread). With `shape.whole`, `ready` runs once the whole body is in (or
  // it failed, or the ring filled because the length lied) even when no take() waits: a binding may hand the
  // response on only then, and a small answer costs it one wake-up.
  static std::shared_ptr<BodyRing> start(transport::EventLoop& loop, Source source, Shape shape, Ready ready);

  enum class Took {
    kBytes,   // `n` > 0 bytes copied
    kLast,    // `n` > 0 bytes copied, the last of a body that ended well (no take needed to see the end)
    kEnd,     // nothing copied: the body ended well
    kWait,    // nothing copied yet: `ready` runs exactly once when a take may find something
    kFailed,  // nothing copied: the body failed with `failure`
  };
  struct Taken {
    Took kind = Took::kWait;
    size_t n = 0;
    Status failure;
  };
  // Copies up to `cap` bytes into `buf`. `drop` first discards what was read ahead (the caller cancelled): the
  // takes then end with kCancelled — the pending read's, or, for a body that had ended well, the ring's own
  // (what was dropped is missing, so the end must not be told). Never waits, never runs `ready`.
  Taken take(char* buf, size_t cap, bool drop);
  // The reader waiting since kWait is done waiting for a batch: what is in the ring, or the next bytes, wake
  // it now. Its one `ready` still comes (perhaps already did; perhaps inside this call).
  void hurry();
  // Loop thread: no read is issued any more and `ready` never runs again; a pending read's outcome is dropped
  // when it comes (its source completes it, e.g. with kCancelled as the body closes).
  void close();

  BodyRing(transport::EventLoop& loop, Source source, Shape shape, Ready ready);
  BodyRing(const BodyRing&) = delete;
  BodyRing& operator=(const BodyRing&) = delete;

 private:
  // A read asks for at least kMinRoom (a nearly full ring waits for the reader instead of reading in crumbs),
  // any room for a ring its body fits in (no more will come than it has room for) or one under twice kMinRoom; a read that brings kFullRead or more says more is on its way.
  static constexpr size_t kMinRoom = size_t{16} * 1024;
  static constexpr size_t kFullRead = size_t{16} * 1024;
  enum class Waiting { kNo, kBatch, kAny };

  // Issues the next read, posted to the loop, when the body goes on, none is in flight and there is room.
  void read_more() REQUIRES(mu_);
  void issue(size_t at, size_t room);  // loop thread
  void on_read(Result<size_t> got);    // loop thread
  // Whether `ready` is due now (the caller runs it once mu_ is released).
  bool due() REQUIRES(mu_);

  transport::EventLoop& loop_;
  const Source source_;
  const Ready ready_;
  const size_t min_room_;
  const bool whole_;
  Mutex mu_;
  bool pending_ GUARDED_BY(mu_) = false;  // a read is in flight, into the tail
  bool ended_ GUARDED_BY(mu_) = false;    // the body ended (failure_ ok) or failed
  bool closed_ GUARDED_BY(mu_) = false;
  bool told_whole_ GUARDED_BY(mu_) = false;
  bool flowing_ GUARDED_BY(mu_) = false;  // the last read was full
  Waiting waiting_ GUARDED_BY(mu_) = Waiting::kNo;
  Status failure_ GUARDED_BY(mu_);
  size_t head_ GUARDED_BY(mu_) = 0;  // the ring: len_ bytes from head_, wrapping at the capacity
  size_t len_ GUARDED_BY(mu_) = 0;
  std::unique_ptr<char[]> ring_;  // its bytes: from tail to head the loop's, from head to tail the reader's
  const size_t cap_;
};

}  // namespace humus::client
